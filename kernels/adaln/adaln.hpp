// Family ADALN (switch FUSED_ADALN): the AdaLN chains of the MoT layers (LayerNorm +
// modulate, the gated residual) and a linear layer's bias add. Its reference, variant
// interface, the ops the model calls and its registry entry; the fused CUDA variant is
// adaln_fused_variant.cpp over adaln_fused.cu and adaln_layer_norm.cu.
#pragma once

#include "kernels/common/registry.hpp"

#include <ATen/ATen.h>

#include <vector>

namespace sg::kernels {

// ---- Reference (adaln_reference.cpp): ATen compositions, differentiable, any device.
// layer_norm(x) (no affine) * (1 + scale) + shift, in this op order.
at::Tensor adaln_modulate_reference(const at::Tensor& x, const at::Tensor& shift,
                                    const at::Tensor& scale, double eps);
// x + y * gate.
at::Tensor gated_residual_reference(const at::Tensor& x, const at::Tensor& y,
                                    const at::Tensor& gate);
// y += bias, what torch::nn::functional::linear does to its matmul output on a 3-D input:
// float(y) + bias in the common dtype, rounded once to y's dtype; in autograd an in-place
// add, so the bias's grad is summed over the rows in the grad's dtype, then cast to the
// bias's. In place on y, except on a leaf that requires grad (autograd forbids it): that is
// cloned first (its backward is an identity).
at::Tensor bias_add_reference(const at::Tensor& y, const at::Tensor& bias);

// ---- Variants (adaln_family.cpp).
// layer_norm(x) * (1 + scale) + shift, and x + y * gate.
struct AdalnArgs {
  at::Tensor x;      // [B, S, C]
  at::Tensor shift;  // broadcastable to x
  at::Tensor scale;  // broadcastable to x
  double eps = 1e-6;
};
class AdalnVariant : public VariantOf<AdalnArgs> {
 public:
  virtual at::Tensor gated_residual(const at::Tensor& x, const at::Tensor& y,
                                    const at::Tensor& gate, const ParamValues& params) const = 0;
  // A linear layer's bias add, y [..., C] += bias [C] float32 (bias_add_reference). May
  // overwrite y. The base runs the reference (a variant without its own kernel for it).
  virtual at::Tensor bias_add(const at::Tensor& y, const at::Tensor& bias,
                              const ParamValues& params) const;
};
// The plain variant (the reference), always available on every device.
const AdalnVariant& plain_adaln();
// The fused CUDA variant; nullptr in a build without CUDA.
const AdalnVariant* fused_adaln();
// Problems built from the actual operands; undefined tensors give an invalid problem.
Problem adaln_problem(const AdalnArgs& args);
Problem gated_problem(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate);
// shape: y's; operands_match: bias float32 [C] on y's device, C = y's last dim, y 2-D or more.
Problem bias_problem(const at::Tensor& y, const at::Tensor& bias);

// ---- The ops the model calls (adaln_ops.cpp), dispatched as kernels/common/dispatch.hpp says.
at::Tensor adaln_modulate(const at::Tensor& x, const at::Tensor& shift, const at::Tensor& scale,
                          double eps);
at::Tensor gated_residual(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate);
// y += bias as torch::nn::functional::linear adds a linear layer's bias to its matmul output
// (bias_add_reference). May overwrite y: pass the matmul output itself.
at::Tensor bias_add(const at::Tensor& y, const at::Tensor& bias);

// ---- Registry entry (kernels/families.cpp).
FamilyInfo adaln_family();
std::vector<OpCase> adaln_op_cases(const KernelShape& shape, int input_sets);  // adaln_cases.cpp

}  // namespace sg::kernels
