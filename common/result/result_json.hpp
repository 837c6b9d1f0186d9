// Spellings of the result file (docs/protocol.md section 3) that the trainer writes and
// the controller writes back from what it parsed, so both write them the same way.
// Header-only: plain C++17 and nlohmann/json, no agent/ or trainer/ includes.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

namespace sg {

// A float32's IEEE-754 bits as the protocol writes them: 8 lower-case hex digits, no 0x.
inline std::string bits_hex(std::uint32_t bits) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(bits));
  return buf;
}

inline std::string float_bits(float v) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits_hex(bits);
}

// The result's "memory" object: the device, the per-rank peaks, the breakdown (a struct
// with parameters, gradients, optimizer, frozen and activations) and, when measured (not
// empty), the per-phase peaks. Numbers keep the callers' types.
template <class Peaks, class Breakdown, class PhasePeaks>
nlohmann::json memory_json(const std::string& device, const Peaks& peak_allocated,
                           const Peaks& peak_reserved, const Breakdown& breakdown,
                           const PhasePeaks& phase_peak_allocated) {
  nlohmann::json memory = {{"device", device},
                           {"peak_allocated_bytes", peak_allocated},
                           {"peak_reserved_bytes", peak_reserved},
                           {"breakdown",
                            {{"parameters", breakdown.parameters},
                             {"gradients", breakdown.gradients},
                             {"optimizer", breakdown.optimizer},
                             {"frozen", breakdown.frozen},
                             {"activations", breakdown.activations}}}};
  if (!phase_peak_allocated.empty()) memory["phase_peak_allocated_bytes"] = phase_peak_allocated;
  return memory;
}

}  // namespace sg
