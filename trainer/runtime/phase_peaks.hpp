// Peak allocated memory per training phase (data, text, vae, forward, backward, clip,
// optimizer), always on. A controller projects each phase's peak to a larger
// micro-batch on its own line and takes the largest (docs/controller.md, "Memory
// projection"): the peak of a step is the maximum of phases that grow at different
// rates, and one line through the step's maximum at two batch sizes extrapolates
// whichever phase happened to peak there.
//
// The device's peak counter is read and reset at every phase boundary (host-side
// allocator statistics: no device synchronisation, nothing computed changes), so the
// ledger also keeps the run's overall peak, which memory_peaks() alone would lose.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <map>
#include <string>

#include "trainer/runtime/memory_tracker.hpp"

namespace sg::trainer {

class PhasePeaks {
 public:
  static PhasePeaks& instance();
  // Start of training: forget earlier phases, reset the device's peak counters.
  void reset(c10::Device device);
  // A phase begins: the peak so far counts toward the overall peak only.
  void begin(c10::Device device);
  // The phase ends: its peak (allocated) counts toward `phase` and the overall peak.
  void end(const char* phase, c10::Device device);
  // The overall peaks since reset(), including time outside any phase.
  MemoryPeaks overall(c10::Device device);
  // Largest allocated bytes seen inside each phase since reset().
  const std::map<std::string, int64_t>& allocated_by_phase() const { return by_phase_; }

 private:
  // The device's peaks since the last fold, added to overall_; then resets them.
  MemoryPeaks fold(c10::Device device);
  MemoryPeaks overall_;
  std::map<std::string, int64_t> by_phase_;
};

}  // namespace sg::trainer
