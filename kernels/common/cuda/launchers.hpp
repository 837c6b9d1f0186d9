// Host launchers of the fused CUDA kernels (defined in kernels/cuda/*.cu, built only when
// SPEEDGATE_WITH_CUDA). They allocate outputs, launch on the current stream and check the
// launch. Autograd wrapping and all problem checks live in kernels/fused/*.cpp: the
// launchers REQUIRE operands the family's can_implement accepted (TORCH_CHECKs guard it).
#pragma once

#include <ATen/ATen.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <tuple>
#include <utility>

namespace sg::kernels::cuda {

// Test hook: when set, every output a launcher allocates is filled with NaN (all bits
// set) before the kernel runs, so an element a kernel fails to write cannot pass.
inline std::atomic<bool>& poison_outputs_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}
inline at::Tensor empty_output(at::IntArrayRef sizes, const at::TensorOptions& options) {
  auto t = at::empty(sizes, options);
  if (poison_outputs_flag().load()) t.fill_(std::numeric_limits<double>::quiet_NaN());
  return t;
}

// ---- ROPE (rope3d_fused.cu). x / grad [B, S, H, D] contiguous, aligned to 2 elements,
// dtype float/bf16/half/double; table [S, D/2, 2] float64 contiguous, 16-byte aligned.
at::Tensor rope3d_forward(const at::Tensor& x, const at::Tensor& table, int64_t threads, int64_t vec);
at::Tensor rope3d_backward(const at::Tensor& grad, const at::Tensor& table, int64_t threads, int64_t vec);

// ---- CAT (joint_cat_fused.cu). video [B, Sv, C], action [B, Sa, C], joint [B, Sv+Sa, C],
// all contiguous and of one dtype. plus_zero: each element is v + 0 in its op math type
// (the engine's sum of two zero-filled slice grads); otherwise a raw row copy. flat: one
// grid-stride loop over all units instead of rows_per_block rows per block.
at::Tensor joint_cat(const at::Tensor& video, const at::Tensor& action, int64_t threads,
                     int64_t rows_per_block, bool flat, bool plus_zero);
std::pair<at::Tensor, at::Tensor> joint_split(const at::Tensor& joint, int64_t video_len, int64_t threads,
                                              int64_t rows_per_block, bool flat);

// ---- ADALN (adaln_fused.cu). Rows [B, S, C] contiguous; scale/shift/gate [Bm, 1, C]
// float32 with Bm in {1, B} and unit stride along C (chunks of the modulation tensor).
// pack 4 (vector accesses) applies where C % 4 == 0 and the operands are aligned; other
// launches use pack 1 (same results either way).
// normed * (1 + scale) + shift -> float32.
at::Tensor modulate_forward(const at::Tensor& normed, const at::Tensor& scale, const at::Tensor& shift,
                            int64_t threads, int64_t vec, int64_t pack);
// grad float32 -> (grad of normed in normed's dtype, grad * normed float32).
std::pair<at::Tensor, at::Tensor> modulate_backward(const at::Tensor& grad, const at::Tensor& normed,
                                                    const at::Tensor& scale, int64_t threads, int64_t vec,
                                                    int64_t pack);
// LayerNorm inside modulate (adaln_layer_norm.cu), statistics and row sums in ATen's order:
// applies to float32 x, or bf16 x when `to_float` (autocast), with C % 4 == 0, x aligned to
// 4 elements, modulation vectors 16-byte aligned with a batch stride that is a multiple of 4.
bool modulate_layer_norm_applies(const at::Tensor& x, const at::Tensor& scale, const at::Tensor& shift,
                                 bool to_float);
// layer_norm(float(x)) * (1 + scale) + shift -> (out float32, mean, rstd float32 [B, S, 1]).
// threads: 128, 256 or 512 per block; row_threads: 32, 64 or 128 threads per row, playing
// ATen's 128 row threads (layer_norm_order.cuh).
std::tuple<at::Tensor, at::Tensor, at::Tensor> modulate_layer_norm_forward(const at::Tensor& x,
                                                                           const at::Tensor& scale,
                                                                           const at::Tensor& shift, double eps,
                                                                           int64_t threads, int64_t row_threads);
// grad float32 -> (x's grad in x's dtype, grad * normed float32).
std::pair<at::Tensor, at::Tensor> modulate_layer_norm_backward(const at::Tensor& grad, const at::Tensor& x,
                                                               const at::Tensor& mean, const at::Tensor& rstd,
                                                               const at::Tensor& scale, int64_t threads,
                                                               int64_t row_threads);
// x + y * gate -> float32. x, y float32 or bf16.
at::Tensor gated_forward(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate, int64_t threads,
                         int64_t vec, int64_t pack);
// grad float32 -> (grad of x in x_dtype, grad of y in y's dtype, grad * y float32).
std::tuple<at::Tensor, at::Tensor, at::Tensor> gated_backward(const at::Tensor& grad, at::ScalarType x_dtype,
                                                              const at::Tensor& y, const at::Tensor& gate,
                                                              int64_t threads, int64_t vec, int64_t pack);

// y [..., C] float32/bf16 contiguous, bias [C] float32 contiguous -> y + bias in y's dtype
// (fused_math::bias_add), a new tensor.
at::Tensor bias_add_forward(const at::Tensor& y, const at::Tensor& bias, int64_t threads, int64_t vec, int64_t pack);

// ---- QKNORM (qk_norm_fused.cu). x [B, S, C] float32/bf16 contiguous; r [B, S, 1] float32
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
std::pair<at::Tensor, at::Tensor> rms_norm_rows(const at::Tensor& x, const at::Tensor& w, const at::Tensor& table,
                                                int64_t heads, double eps, int64_t threads, int64_t row_warps);
// float(T(x * r)) * w (then rotated) -> float32 [B, S, C], or [B, S, heads, hd] with a table.
at::Tensor rms_normalize(const at::Tensor& x, const at::Tensor& r, const at::Tensor& w, const at::Tensor& table,
                         int64_t heads, int64_t threads, int64_t vec);
// g: the grad of the output, float32 shaped like x (rotated back first with a table) ->
// (per-element product summed per row into r's grad, per-element product summed per
// column into w's grad), both float32 [B, S, C].
std::pair<at::Tensor, at::Tensor> rms_backward_products(const at::Tensor& g, const at::Tensor& x, const at::Tensor& r,
                                                        const at::Tensor& w, const at::Tensor& table, int64_t heads,
                                                        int64_t threads, int64_t vec);
// g_mean [B, S, 1] float32: the row's mean grad -> x's grad in x's dtype.
at::Tensor rms_grad_input(const at::Tensor& g, const at::Tensor& x, const at::Tensor& r, const at::Tensor& w,
                          const at::Tensor& g_mean, const at::Tensor& table, int64_t heads, int64_t threads,
                          int64_t vec);

}  // namespace sg::kernels::cuda
