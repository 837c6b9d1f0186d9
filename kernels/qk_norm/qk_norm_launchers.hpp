// QKNORM's host launchers (CUDA builds only); the contract shared by every family's
// launchers is kernels/common/cuda/launchers.hpp.
#pragma once

#include "kernels/common/cuda/launchers.hpp"

#include <ATen/ATen.h>

#include <cstdint>
#include <utility>

namespace sg::kernels::cuda {

// qk_norm_fused.cu: x [B, S, C] float32/bf16 contiguous; r [B, S, 1] float32
// (rsqrt(mean(x^2) + eps), from ATen); w [C] float32; table undefined (RMSNorm only) or
// [S, hd/2, 2] float64, hd = C / heads even, 16-byte aligned (then x pairs rotate).
// float(x)^2 -> float32 [B, S, C]: the tensor ATen's mean reduces.
at::Tensor rms_square(const at::Tensor& x, int64_t threads, int64_t vec);
// The whole forward in one pass per row (qk_norm_rows.cu): the mean of float(x)^2 summed in
// the order of ATen's CUDA mean over the squares, + eps, rsqrt, then as rms_normalize ->
// (out, r). Applies to contiguous [B, S, C] float32/bf16 x with >= 16 rows, 128 <= C <= 8160,
// C % 4 == 0, rows * C * 4 bytes within int32, x aligned to 4 elements, and w float32 [C]
// contiguous, 16-byte aligned, on x's device. threads: a multiple of 32 * row_warps up to 512;
// row_warps: warps a row (1, or 2 for rows of up to 1536 elements: each warp holds half a
// lane's vectors; longer rows run one warp a row).
bool rms_norm_rows_applies(const at::Tensor& x, const at::Tensor& w);
std::pair<at::Tensor, at::Tensor> rms_norm_rows(const at::Tensor& x, const at::Tensor& w,
                                                const at::Tensor& table, int64_t heads, double eps,
                                                int64_t threads, int64_t row_warps);
// float(T(x * r)) * w (then rotated) -> float32 [B, S, C], or [B, S, heads, hd] with a table.
at::Tensor rms_normalize(const at::Tensor& x, const at::Tensor& r, const at::Tensor& w,
                         const at::Tensor& table, int64_t heads, int64_t threads, int64_t vec);
// g: the grad of the output, float32 shaped like x (rotated back first with a table) ->
// (per-element product summed per row into r's grad, per-element product summed per
// column into w's grad), both float32 [B, S, C].
std::pair<at::Tensor, at::Tensor> rms_backward_products(const at::Tensor& g, const at::Tensor& x,
                                                        const at::Tensor& r, const at::Tensor& w,
                                                        const at::Tensor& table, int64_t heads,
                                                        int64_t threads, int64_t vec);
// g_mean [B, S, 1] float32: the row's mean grad -> x's grad in x's dtype.
at::Tensor rms_grad_input(const at::Tensor& g, const at::Tensor& x, const at::Tensor& r,
                          const at::Tensor& w, const at::Tensor& g_mean, const at::Tensor& table,
                          int64_t heads, int64_t threads, int64_t vec);

}  // namespace sg::kernels::cuda
