// Phase profiling (see phase_profile.hpp).
#include "trainer/runtime/phase_profile.hpp"

#include <torch/cuda.h>

#include "trainer/runtime/phase_peaks.hpp"

#include <cstdlib>
#include <cstring>

namespace sg::trainer {
namespace {

void synchronize(c10::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index() < 0 ? -1 : device.index());
}

}  // namespace

PhaseProfile::PhaseProfile() {
  const char* v = std::getenv("SPEEDGATE_PROFILE");
  enabled_ = v != nullptr && std::strcmp(v, "1") == 0;
}

PhaseProfile& PhaseProfile::instance() {
  static PhaseProfile profile;
  return profile;
}

void PhaseProfile::add(const std::string& phase, double seconds) {
  if (recording_) seconds_[phase] += seconds;
}

nlohmann::json PhaseProfile::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [phase, s] : seconds_) out[phase] = s;
  return out;
}

ScopedPhase::ScopedPhase(const char* phase, c10::Device device)
    : phase_(phase), device_(device), on_(PhaseProfile::instance().enabled()) {
  PhasePeaks::instance().begin(device_);
  if (!on_) return;
  synchronize(device_);
  start_ = std::chrono::steady_clock::now();
}

ScopedPhase::~ScopedPhase() {
  PhasePeaks::instance().end(phase_, device_);
  if (!on_) return;
  synchronize(device_);
  PhaseProfile::instance().add(
      phase_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
}

}  // namespace sg::trainer
