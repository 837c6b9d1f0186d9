// Family ROPE (switch FUSED_ROPE): the 3-D RoPE rotation of the video q/k (and lm's q/k,
// whose 1-D table has the same layout). Its reference, variant interface, the op the model calls
// and its registry entry; the fused CUDA variant is rope_fused_variant.cpp over rope3d_fused.cu.
#pragma once

#include "kernels/common/registry.hpp"

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace sg::kernels {

// ---- Reference (rope_reference.cpp): ATen compositions, differentiable, any device.
// 3-D RoPE angle table for a frames x height x width token grid, float64, shape
// [F*H*W, head_dim/2, 2] holding (cos, sin). The head_dim/2 rotation pairs are split
// frame / height / width as c - 2*(c/3), c/3, c/3 (Wan's split).
// REQUIRES: head_dim even and >= 6.
at::Tensor rope3d_table(int64_t frames, int64_t height, int64_t width, int64_t head_dim,
                        double theta, c10::Device device);

// Rotates x [B, S, H, D] by table [S, D/2, 2] with float64 products, then rounds back to
// x's dtype (the rounding steps of Wan's rope_apply).
at::Tensor rope3d_apply_reference(const at::Tensor& x, const at::Tensor& table);

// ---- Variants (rope_family.cpp).
// x [B, S, H, D] (D even) rotated by a float64 table [S, D/2, 2] (cos, sin).
struct RopeArgs {
  at::Tensor x;
  at::Tensor table;
};
using RopeVariant = VariantOf<RopeArgs>;
// The plain variant (the reference), always available on every device.
const RopeVariant& plain_rope();
// The fused CUDA variant; nullptr in a build without CUDA.
const RopeVariant* fused_rope();
// The problem built from the actual operands (what can_implement judges); undefined
// tensors give an invalid problem (empty shape).
Problem rope_problem(const RopeArgs& args);

// ---- The op the model calls (rope_ops.cpp), dispatched as kernels/common/dispatch.hpp says.
at::Tensor rope_apply(const at::Tensor& x, const at::Tensor& table);

// ---- Registry entry (kernels/families.cpp).
FamilyInfo rope_family();
std::vector<OpCase> rope_op_cases(const KernelShape& shape, int input_sets);  // rope_cases.cpp

}  // namespace sg::kernels
