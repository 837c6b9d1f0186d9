// Family QKNORM (switch FUSED_QK_NORM): the q/k RMSNorm (every RMSNorm of the backbone)
// and, for the video q/k, RMSNorm + 3-D RoPE in one pass when ROPE is selected too. Its
// reference, variant interface, the ops the model calls and its registry entry; the fused
// CUDA variant is qk_norm_fused_variant.cpp over qk_norm_fused.cu and qk_norm_rows.cu.
#pragma once

#include "kernels/common/registry.hpp"
#include "kernels/rope/rope.hpp"

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace sg::kernels {

// ---- Reference (qk_norm_reference.cpp): ATen compositions, differentiable, any device.
// RMSNorm over the last dim in float32, cast back to x's dtype, times a float32 weight
// (Wan's WanRMSNorm): x.float() * rsqrt(mean(x.float()^2) + eps), .to(x dtype) * weight.
at::Tensor rms_norm_reference(const at::Tensor& x, const at::Tensor& weight, double eps);
// rms_norm_reference of x [B, S, C] viewed [B, S, heads, C / heads], then
// rope3d_apply_reference with table [S, C / heads / 2, 2] (the video q/k path).
at::Tensor rms_norm_rope_reference(const at::Tensor& x, const at::Tensor& weight, double eps,
                                   const at::Tensor& table, int64_t heads);

// ---- Variants (qk_norm_family.cpp).
// RMSNorm of x [B, S, C] with a float32 weight [C]; with a table (defined), the result
// viewed [B, S, heads, C / heads] and rotated by the 3-D RoPE table [S, hd/2, 2].
struct QkNormArgs {
  at::Tensor x;
  at::Tensor weight;
  double eps = 1e-6;
  at::Tensor table;  // undefined: RMSNorm only
  int64_t heads = 1;
};
using QkNormVariant = VariantOf<QkNormArgs>;
// The plain variant (the reference), always available on every device.
const QkNormVariant& plain_qk_norm();
// The fused CUDA variant; nullptr in a build without CUDA.
const QkNormVariant* fused_qk_norm();
// shape: x's [B, S, C], or [B, S, heads, C / heads] when args.table is defined; undefined
// tensors give an invalid problem.
Problem qk_norm_problem(const QkNormArgs& args);

// ---- The ops the model calls (qk_norm_ops.cpp), dispatched as kernels/common/dispatch.hpp says.
// rms_norm_reference.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);
// rope_apply(rms_norm(x, weight, eps).view({B, S, heads, C / heads}), table). One fused
// pass (QKNORM's norm + rotation) only when both QKNORM and ROPE are selected and
// neither fell back; otherwise the two ops, each dispatched on its own.
at::Tensor rms_norm_rope(const at::Tensor& x, const at::Tensor& weight, double eps,
                         const at::Tensor& table, int64_t heads);

// ---- Registry entry (kernels/families.cpp).
FamilyInfo qk_norm_family();
std::vector<OpCase> qk_norm_op_cases(const KernelShape& shape,
                                     int input_sets);  // qk_norm_cases.cpp

}  // namespace sg::kernels
