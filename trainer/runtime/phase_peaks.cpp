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

void PhasePeaks::fold(c10::Device device) {
  last_ = memory_peaks(device);
  overall_.allocated = std::max(overall_.allocated, last_.allocated);
  overall_.reserved = std::max(overall_.reserved, last_.reserved);
  reset_memory_peaks(device);
}

void PhasePeaks::begin(c10::Device device) { fold(device); }

void PhasePeaks::end(const char* phase, c10::Device device) {
  fold(device);
  auto& peak = by_phase_[phase];
  peak = std::max(peak, last_.allocated);
}

MemoryPeaks PhasePeaks::overall(c10::Device device) {
  fold(device);
  return overall_;
}

}  // namespace sg::trainer
