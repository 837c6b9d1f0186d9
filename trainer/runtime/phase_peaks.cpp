// Peak allocated memory per phase (see phase_peaks.hpp).
#include "trainer/runtime/phase_peaks.hpp"

#include <algorithm>

namespace sg::trainer {

PhasePeaks& PhasePeaks::instance() {
  static PhasePeaks ledger;
  return ledger;
}

void PhasePeaks::reset(c10::Device device) {
  by_phase_.clear();
  reset_memory_peaks(device);
  overall_ = memory_peaks(device);
}

MemoryPeaks PhasePeaks::fold(c10::Device device) {
  const MemoryPeaks read = memory_peaks(device);
  overall_.allocated = std::max(overall_.allocated, read.allocated);
  overall_.reserved = std::max(overall_.reserved, read.reserved);
  reset_memory_peaks(device);
  return read;
}

void PhasePeaks::begin(c10::Device device) { fold(device); }

void PhasePeaks::end(const char* phase, c10::Device device) {
  const int64_t allocated = fold(device).allocated;
  auto& peak = by_phase_[phase];
  peak = std::max(peak, allocated);
}

MemoryPeaks PhasePeaks::overall(c10::Device device) {
  fold(device);
  return overall_;
}

}  // namespace sg::trainer
