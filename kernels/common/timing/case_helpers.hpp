// Helpers of the families' op cases (kernels/<family>/<family>_cases.cpp): autocast as the
// model runs, the variant a case runs, and rotating input sets.
#pragma once

#include "kernels/common/timing/op_cases.hpp"

#include <ATen/autocast_mode.h>

#include <functional>
#include <stdexcept>
#include <vector>

namespace sg::kernels::cases {

using Inputs = std::vector<at::Tensor>;

// bf16 autocast around one call on CUDA (as the model's forward runs); nothing on the CPU.
class AutocastIf {
 public:
  explicit AutocastIf(bool on) : on_(on) {
#if SPEEDGATE_WITH_CUDA
    if (on_) {
      at::autocast::set_autocast_enabled(at::kCUDA, true);
      at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    }
#endif
  }
  ~AutocastIf() {
#if SPEEDGATE_WITH_CUDA
    if (on_) {
      at::autocast::set_autocast_enabled(at::kCUDA, false);
      at::autocast::clear_cache();
    }
#endif
  }
  AutocastIf(const AutocastIf&) = delete;
  AutocastIf& operator=(const AutocastIf&) = delete;

 private:
  bool on_;
};

// The plain variant when params is null, else the fused one (which must be built).
template <class V>
const V& pick(const V* fused, const V& plain, const ParamValues* params) {
  if (params == nullptr) return plain;
  if (fused == nullptr) throw std::invalid_argument("no fused variant in this build");
  return *fused;
}

inline const ParamValues& values(const ParamValues* params) {
  static const ParamValues kNone;
  return params ? *params : kNone;
}

// The model's dtypes and sizes at a KernelShape: on CUDA a linear's output is bf16 (autocast),
// on the CPU everything is float32.
struct CaseDims {
  explicit CaseDims(const KernelShape& s)
      : cuda(s.device.is_cuda()),
        opts(at::TensorOptions().device(s.device)),
        low(cuda ? at::kBFloat16 : at::kFloat),
        low_name(cuda ? "bf16" : "fp32"),
        autocast_name(cuda ? " autocast" : ""),
        b(s.batch),
        tv(s.video_tokens),
        ta(s.action_tokens),
        heads(s.heads),
        hd(s.head_dim),
        dv(s.heads * s.head_dim) {}
  bool cuda;
  at::TensorOptions opts;
  at::ScalarType low;  // a linear's output under autocast
  const char* low_name;
  const char* autocast_name;
  int64_t b, tv, ta, heads, hd, dv;
};

inline std::vector<Inputs> make_sets(int n, const std::function<Inputs()>& make) {
  std::vector<Inputs> sets;
  for (int i = 0; i < n; ++i) sets.push_back(make());
  return sets;
}

}  // namespace sg::kernels::cases
