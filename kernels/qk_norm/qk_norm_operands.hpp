// Operand checks and dtype dispatch shared by the QKNORM launchers (qk_norm_fused.cu,
// qk_norm_rows.cu): x [B, S, C] float32/bf16 and the 3-D RoPE table.
#pragma once

#include "kernels/common/cuda/host_checks.hpp"

#include <ATen/ATen.h>

#include <cstdint>
#include <utility>

namespace sg::kernels::cuda::qk_norm {

// Calls f(T{}) for T the C++ type of a float32 or bf16 x.
template <typename F>
inline void with_type(at::ScalarType t, F&& f) {
  with_float_or_bf16(t, "qk_norm: x", std::forward<F>(f));
}

// The rotation's operands: heads dividing C into even head widths hd, and the table float64
// [S, hd / 2, 2] on x's device, contiguous, 16-byte aligned (read as double2). Returns hd / 2.
inline int64_t check_rope_table(const at::Tensor& table, const at::Tensor& x, int64_t heads) {
  TORCH_CHECK(heads > 0 && x.size(2) % heads == 0 && (x.size(2) / heads) % 2 == 0,
              "qk_norm: bad heads");
  const int64_t hd = x.size(2) / heads;
  TORCH_CHECK(table.is_cuda() && table.device() == x.device() &&
                  table.scalar_type() == at::kDouble && table.is_contiguous() && table.dim() == 3 &&
                  table.size(0) == x.size(1) && table.size(1) * 2 == hd && table.size(2) == 2 &&
                  aligned_to(table, 16),
              "qk_norm: bad rope table");
  return hd / 2;
}

}  // namespace sg::kernels::cuda::qk_norm
