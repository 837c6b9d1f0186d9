// Host-side helpers shared by the CUDA launchers (kernels/<family>/*.cu): pointer alignment and
// the float32 / bf16 dispatch of a row tensor's element type.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace sg::kernels::cuda {

// Whether t's data pointer is a multiple of `bytes`.
inline bool aligned_to(const at::Tensor& t, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % bytes == 0;
}

// Calls f(T{}) for T the C++ type of a float32 or bf16 tensor; `what` names the operand in
// the error for any other dtype.
template <typename F>
inline void with_float_or_bf16(at::ScalarType t, const char* what, F&& f) {
  if (t == at::kFloat) {
    f(float{});
  } else {
    TORCH_CHECK(t == at::kBFloat16, what, " must be float32 or bfloat16");
    f(c10::BFloat16{});
  }
}

}  // namespace sg::kernels::cuda
