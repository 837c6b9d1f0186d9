// Where a training step's time goes, for people tuning by hand and for the H200 results
// files. Enabled by SPEEDGATE_PROFILE=1 (deliberately not an SG_* switch: it changes
// timing, never what is computed, and is never searched or written into a preset).
// When enabled every phase boundary synchronises the device, so phase times add up to
// the step time but the run itself is slower: never compare throughput of profiled runs
// with unprofiled ones. Disabled, a ScopedPhase only records the phase's peak memory
// (phase_peaks.hpp: host-side allocator counters, no synchronisation).
#pragma once

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <string>

namespace sg::trainer {

class PhaseProfile {
 public:
  static PhaseProfile& instance();
  bool enabled() const { return enabled_; }
  // Only phases that end while recording count (the loop records steady-state steps).
  void set_recording(bool on) { recording_ = on; }
  void add(const std::string& phase, double seconds);
  // {"phase": seconds summed over recorded steps, ...}; empty when disabled.
  nlohmann::json to_json() const;

 private:
  PhaseProfile();
  bool enabled_ = false;
  bool recording_ = false;
  std::map<std::string, double> seconds_;
};

// Records its scope's peak memory as `phase` (always) and times it (device synchronised
// at both ends) when profiling is on.
class ScopedPhase {
 public:
  ScopedPhase(const char* phase, c10::Device device);
  ~ScopedPhase();
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  const char* phase_;
  c10::Device device_;
  bool on_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace sg::trainer
