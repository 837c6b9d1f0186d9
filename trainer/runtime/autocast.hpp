// bf16 autocast on CUDA (fp32 on CPU), across LibTorch 1.13 and 2.x APIs. The state is
// thread-local, so the checkpoint recompute (run on an autograd worker thread) restores
// the forward's state explicitly.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace sg::trainer {

struct AutocastState {
  bool enabled = false;
  at::ScalarType dtype = at::kBFloat16;
};

inline AutocastState current_autocast_state() {
#if TORCH_VERSION_MAJOR >= 2
  return {at::autocast::is_autocast_enabled(at::kCUDA),
          at::autocast::get_autocast_dtype(at::kCUDA)};
#else
  return {at::autocast::is_enabled(), at::autocast::get_autocast_gpu_dtype()};
#endif
}

inline void set_autocast_state(const AutocastState& s) {
#if TORCH_VERSION_MAJOR >= 2
  at::autocast::set_autocast_enabled(at::kCUDA, s.enabled);
  at::autocast::set_autocast_dtype(at::kCUDA, s.dtype);
#else
  at::autocast::set_enabled(s.enabled);
  at::autocast::set_autocast_gpu_dtype(s.dtype);
#endif
}

// Sets a state for a scope and restores the previous one (clearing the cast cache when
// autocast ends, as torch.autocast does).
class AutocastScope {
 public:
  explicit AutocastScope(const AutocastState& s) : previous_(current_autocast_state()) {
    set_autocast_state(s);
  }
  ~AutocastScope() {
    set_autocast_state(previous_);
    if (!previous_.enabled) at::autocast::clear_cache();
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  AutocastState previous_;
};

}  // namespace sg::trainer
