// CPU reference ops of the wam model (ATen compositions, differentiable, any device).
// The model calls these through the plain kernel variants; the fused CUDA variants of
// the Kernels issue must reproduce them bit for bit (forward and backward).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <utility>

namespace sg::kernels {

// 3-D RoPE angle table for a frames x height x width token grid, float64, shape
// [F*H*W, head_dim/2, 2] holding (cos, sin). The head_dim/2 rotation pairs are split
// frame / height / width as c - 2*(c/3), c/3, c/3 (Wan's split).
// REQUIRES: head_dim even and >= 6.
at::Tensor rope3d_table(int64_t frames, int64_t height, int64_t width, int64_t head_dim,
                        double theta, c10::Device device);

// Rotates x [B, S, H, D] by table [S, D/2, 2] with float64 products, then rounds back to
// x's dtype (the rounding steps of Wan's rope_apply).
at::Tensor rope3d_apply_reference(const at::Tensor& x, const at::Tensor& table);

// [video; action] along dim 1 and its inverse.
at::Tensor joint_cat_reference(const at::Tensor& video, const at::Tensor& action);
std::pair<at::Tensor, at::Tensor> joint_split_reference(const at::Tensor& joint, int64_t video_len);

// layer_norm(x) (no affine) * (1 + scale) + shift, in this op order.
at::Tensor adaln_modulate_reference(const at::Tensor& x, const at::Tensor& shift,
                                    const at::Tensor& scale, double eps);
// x + y * gate.
at::Tensor gated_residual_reference(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate);
// y += bias, what torch::nn::functional::linear does to its matmul output on a 3-D input:
// float(y) + bias in the common dtype, rounded once to y's dtype; in autograd an in-place
// add, so the bias's grad is summed over the rows in the grad's dtype, then cast to the
// bias's. In place on y, except on a leaf that requires grad (autograd forbids it): that is
// cloned first (its backward is an identity).
at::Tensor bias_add_reference(const at::Tensor& y, const at::Tensor& bias);

// RMSNorm over the last dim in float32, cast back to x's dtype, times a float32 weight
// (Wan's WanRMSNorm): x.float() * rsqrt(mean(x.float()^2) + eps), .to(x dtype) * weight.
at::Tensor rms_norm_reference(const at::Tensor& x, const at::Tensor& weight, double eps);
// rms_norm_reference of x [B, S, C] viewed [B, S, heads, C / heads], then
// rope3d_apply_reference with table [S, C / heads / 2, 2] (the video q/k path).
at::Tensor rms_norm_rope_reference(const at::Tensor& x, const at::Tensor& weight, double eps,
                                   const at::Tensor& table, int64_t heads);

}  // namespace sg::kernels
