// Operand checks and dtype dispatch shared by the ADALN launchers (adaln_fused.cu,
// adaln_layer_norm.cu): rows [B, S, C] and [Bm, 1, C] float32 modulation vectors.
#pragma once

#include <ATen/ATen.h>

namespace sg::kernels::cuda::adaln {

// Calls f(T{}) for T the C++ type of a float32 or bf16 tensor.
template <typename F>
inline void with_type(at::ScalarType t, F&& f) {
  if (t == at::kFloat) {
    f(float{});
  } else {
    TORCH_CHECK(t == at::kBFloat16, "adaln: rows must be float32 or bfloat16");
    f(c10::BFloat16{});
  }
}

inline void check_rows(const at::Tensor& t, const at::Tensor& like) {
  TORCH_CHECK(t.is_cuda() && t.device() == like.device() && t.is_contiguous() && t.sizes() == like.sizes(),
              "adaln: row operand must be a contiguous tensor shaped like x on x's device");
}

// Batch stride of a [Bm, 1, C] float32 modulation vector (0 when broadcast over batch).
inline int64_t mod_stride(const at::Tensor& m, const at::Tensor& rows) {
  TORCH_CHECK(m.is_cuda() && m.device() == rows.device() && m.scalar_type() == at::kFloat && m.dim() == 3 &&
                  m.size(1) == 1 && m.size(2) == rows.size(2) && (m.size(0) == 1 || m.size(0) == rows.size(0)) &&
                  (m.stride(2) == 1 || m.size(2) == 1),
              "adaln: modulation must be float32 [1 or B, 1, C] with unit stride along C");
  return m.size(0) == 1 ? 0 : m.stride(0);
}

}  // namespace sg::kernels::cuda::adaln
