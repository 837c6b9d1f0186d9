// ADALN's host launchers (CUDA builds only); the contract shared by every family's
// launchers is kernels/common/cuda/launchers.hpp.
#pragma once

#include "kernels/common/cuda/launchers.hpp"

#include <ATen/ATen.h>

#include <cstdint>
#include <tuple>
#include <utility>

namespace sg::kernels::cuda {

// adaln_fused.cu: rows [B, S, C] contiguous; scale/shift/gate [Bm, 1, C]
// float32 with Bm in {1, B} and unit stride along C (chunks of the modulation tensor).
// pack 4 (vector accesses) applies where C % 4 == 0 and the operands are aligned; other
// launches use pack 1 (same results either way).
// normed * (1 + scale) + shift -> float32.
at::Tensor modulate_forward(const at::Tensor& normed, const at::Tensor& scale,
                            const at::Tensor& shift, int64_t threads, int64_t vec, int64_t pack);
// grad float32 -> (grad of normed in normed's dtype, grad * normed float32).
std::pair<at::Tensor, at::Tensor> modulate_backward(const at::Tensor& grad,
                                                    const at::Tensor& normed,
                                                    const at::Tensor& scale, int64_t threads,
                                                    int64_t vec, int64_t pack);
// LayerNorm inside modulate (adaln_layer_norm.cu), statistics and row sums in ATen's order:
// applies to float32 x, or bf16 x when `to_float` (autocast), with C % 4 == 0, x aligned to
// 4 elements, modulation vectors 16-byte aligned with a batch stride that is a multiple of 4.
bool modulate_layer_norm_applies(const at::Tensor& x, const at::Tensor& scale,
                                 const at::Tensor& shift, bool to_float);
// layer_norm(float(x)) * (1 + scale) + shift -> (out float32, mean, rstd float32 [B, S, 1]).
// threads: 128, 256 or 512 per block; row_threads: 32, 64 or 128 threads per row, playing
// ATen's 128 row threads (layer_norm_order.cuh).
std::tuple<at::Tensor, at::Tensor, at::Tensor> modulate_layer_norm_forward(
    const at::Tensor& x, const at::Tensor& scale, const at::Tensor& shift, double eps,
    int64_t threads, int64_t row_threads);
// grad float32 -> (x's grad in x's dtype, grad * normed float32).
std::pair<at::Tensor, at::Tensor> modulate_layer_norm_backward(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
    const at::Tensor& scale, int64_t threads, int64_t row_threads);
// x + y * gate -> float32. x, y float32 or bf16.
at::Tensor gated_forward(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate,
                         int64_t threads, int64_t vec, int64_t pack);
// grad float32 -> (grad of x in x_dtype, grad of y in y's dtype, grad * y float32).
std::tuple<at::Tensor, at::Tensor, at::Tensor> gated_backward(
    const at::Tensor& grad, at::ScalarType x_dtype, const at::Tensor& y, const at::Tensor& gate,
    int64_t threads, int64_t vec, int64_t pack);

// y [..., C] float32/bf16 contiguous, bias [C] float32 contiguous -> y + bias in y's dtype
// (fused_math::bias_add), a new tensor.
at::Tensor bias_add_forward(const at::Tensor& y, const at::Tensor& bias, int64_t threads,
                            int64_t vec, int64_t pack);

}  // namespace sg::kernels::cuda
