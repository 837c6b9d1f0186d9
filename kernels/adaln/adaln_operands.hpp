// Operand checks and dtype dispatch shared by the ADALN launchers (adaln_fused.cu,
// adaln_layer_norm.cu): rows [B, S, C] and [Bm, 1, C] float32 modulation vectors.
#pragma once

#include "kernels/common/cuda/host_checks.hpp"

#include <ATen/ATen.h>

#include <utility>

namespace sg::kernels::cuda::adaln {

// Calls f(T{}) for T the C++ type of a float32 or bf16 row tensor.
template <typename F>
inline void with_type(at::ScalarType t, F&& f) {
  with_float_or_bf16(t, "adaln: rows", std::forward<F>(f));
}

inline void check_rows(const at::Tensor& t, const at::Tensor& like) {
  TORCH_CHECK(
      t.is_cuda() && t.device() == like.device() && t.is_contiguous() && t.sizes() == like.sizes(),
      "adaln: row operand must be a contiguous tensor shaped like x on x's device");
}

// Whether m is a modulation vector of [B, S, C] rows: float32 [1 or B, 1, C] with unit stride
// along C, on the rows' device.
inline bool is_mod_vector(const at::Tensor& m, const at::Tensor& rows) {
  return m.is_cuda() && m.device() == rows.device() && m.scalar_type() == at::kFloat &&
         m.dim() == 3 && m.size(1) == 1 && m.size(2) == rows.size(2) &&
         (m.size(0) == 1 || m.size(0) == rows.size(0)) && (m.stride(2) == 1 || m.size(2) == 1);
}

// Whether a modulation vector can be read 4 floats at a time (one 16-byte load) at every
// multiple of 4 along C: aligned to 16 bytes, with a batch stride that is a multiple of 4.
inline bool mod_vector_loads_by_4(const at::Tensor& m) {
  return aligned_to(m, 16) && (m.size(0) <= 1 || m.stride(0) % 4 == 0);
}

// Batch stride of a [Bm, 1, C] float32 modulation vector (0 when broadcast over batch).
inline int64_t mod_stride(const at::Tensor& m, const at::Tensor& rows) {
  TORCH_CHECK(is_mod_vector(m, rows),
              "adaln: modulation must be float32 [1 or B, 1, C] with unit stride along C");
  return m.size(0) == 1 ? 0 : m.stride(0);
}

}  // namespace sg::kernels::cuda::adaln
