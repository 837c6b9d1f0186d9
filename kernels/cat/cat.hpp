// Family CAT (switch FAST_CAT): the [video; action] q/k/v concatenation along the sequence
// and the attention output's split. Its reference, variant interface, the ops the model
// calls and its registry entry; the fused CUDA variant is cat_fused_variant.cpp over
// joint_cat_fused.cu.
#pragma once

#include "kernels/common/registry.hpp"

#include <ATen/ATen.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace sg::kernels {

// ---- Reference (cat_reference.cpp): [video; action] along dim 1 and its inverse.
at::Tensor joint_cat_reference(const at::Tensor& video, const at::Tensor& action);
std::pair<at::Tensor, at::Tensor> joint_split_reference(const at::Tensor& joint, int64_t video_len);

// ---- Variants (cat_family.cpp).
struct CatArgs {
  at::Tensor video;   // [B, Sv, C]
  at::Tensor action;  // [B, Sa, C]
};
class CatVariant : public VariantOf<CatArgs> {
 public:
  virtual std::pair<at::Tensor, at::Tensor> split(const at::Tensor& joint, int64_t video_len,
                                                  const ParamValues& params) const = 0;
};
// The plain variant (the reference), always available on every device.
const CatVariant& plain_cat();
// The fused CUDA variant; nullptr in a build without CUDA.
const CatVariant* fused_cat();
// Problems built from the actual operands; undefined tensors give an invalid problem.
Problem cat_problem(const CatArgs& args);  // shape: the joint [B, Sv + Sa, C]
Problem split_problem(const at::Tensor& joint, int64_t video_len);

// ---- The ops the model calls (cat_ops.cpp), dispatched as kernels/common/dispatch.hpp says.
at::Tensor joint_cat(const at::Tensor& video, const at::Tensor& action);
std::pair<at::Tensor, at::Tensor> joint_split(const at::Tensor& joint, int64_t video_len);

// ---- Registry entry (kernels/families.cpp).
FamilyInfo cat_family();
std::vector<OpCase> cat_op_cases(const KernelShape& shape, int input_sets);  // cat_cases.cpp

}  // namespace sg::kernels
