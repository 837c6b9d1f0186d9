// The device kind a preset was measured on ("NVIDIA H200", "cpu") and whether it is
// this host's: a preset from another kind of device is never verified, demoted or
// rewritten here (its speed and memory claims are about that device).
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace sg::agent {

class Store;
struct Manifest;

// "cpu" for a CPU fingerprint, else its device_name ("NVIDIA H200"), else its device.
// Empty when the fingerprint names no device.
std::string device_kind(const nlohmann::json& fingerprint);

// The kind named by a preset's "# fingerprint: HASH (device cuda 'NVIDIA H200', ..."
// provenance comment; nullopt when the preset has none (hand-written presets).
std::optional<std::string> preset_device_kind(const std::string& preset_text);

// This host's kind without running anything: the newest campaign's environment in
// `store` when it has one (measured here), else "cpu" when the trainer was built
// without CUDA or no GPU is listed, else "cuda" (a GPU of unknown name).
std::string host_device_kind(Store* store, const Manifest& manifest);

// True when a preset measured on `preset_kind` may be judged on a `host_kind` host:
// same kind, or "cuda" (name unknown) against any GPU name.
bool same_device_kind(const std::string& preset_kind, const std::string& host_kind);

// "skipped: measured on NVIDIA H200, this host is cpu"
std::string skipped_reason(const std::string& preset_kind, const std::string& host_kind);

}  // namespace sg::agent
