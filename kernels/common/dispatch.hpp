// The kernel ops the model calls (RoPE, [video; action] cat/split, AdaLN modulate, gated
// residual, linear bias add, q/k RMSNorm and RMSNorm + RoPE): each runs the plain variant unless its family is selected, the fused
// variant can implement the problem, and the family has not fallen back. The first
// fused call of each op in a process is compared, forward and backward, against the
// plain variant on its actual inputs; any difference makes the family fall back to
// plain for the rest of the process (logged to stderr once).
#pragma once

#include "kernels/common/registry.hpp"

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sg::kernels {

// Which families run fused, and their SG_KERNEL_<FAMILY> parameter strings.
struct KernelSelection {
  bool fused_rope = false;   // family ROPE (switch FUSED_ROPE)
  bool fast_cat = false;     // family CAT (switch FAST_CAT)
  bool fused_adaln = false;  // family ADALN (switch FUSED_ADALN)
  std::map<std::string, std::string> params;  // family name -> "threads=128,vec=2"
  bool fused_qk_norm = false;  // family QKNORM (switch FUSED_QK_NORM)
};

// Process-wide, like ATen's global context flags: set once before the first step.
// Throws std::invalid_argument naming the family for a bad parameter string or a family
// selected in a build without its fused variant.
void select_kernels(const KernelSelection& selection);

at::Tensor rope_apply(const at::Tensor& x, const at::Tensor& table);
at::Tensor joint_cat(const at::Tensor& video, const at::Tensor& action);
std::pair<at::Tensor, at::Tensor> joint_split(const at::Tensor& joint, int64_t video_len);
at::Tensor adaln_modulate(const at::Tensor& x, const at::Tensor& shift, const at::Tensor& scale, double eps);
at::Tensor gated_residual(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate);
// y += bias as torch::nn::functional::linear adds a linear layer's bias to its matmul output
// (bias_add_reference; family ADALN). May overwrite y: pass the matmul output itself.
at::Tensor bias_add(const at::Tensor& y, const at::Tensor& bias);
// rms_norm_reference (QKNORM).
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);
// rope_apply(rms_norm(x, weight, eps).view({B, S, heads, C / heads}), table). One fused
// pass (QKNORM's norm + rotation) only when both QKNORM and ROPE are selected and
// neither fell back; otherwise the two ops, each dispatched on its own.
at::Tensor rms_norm_rope(const at::Tensor& x, const at::Tensor& weight, double eps, const at::Tensor& table,
                         int64_t heads);

// Bit-for-bit equality (dtype, shape and every element's bits: -0.0 differs from +0.0,
// NaN payloads count), unlike at::equal which compares values.
bool bitwise_equal(const at::Tensor& a, const at::Tensor& b);

// Families that fell back to plain after a first-call mismatch, in this process.
std::vector<std::string> fallen_back_families();

namespace testing {
// Forget first-call results and fallbacks (and the injection below).
void reset_first_call_checks();
// Make the next first-call comparison of `family` see a difference.
void inject_first_call_mismatch(const std::string& family);
// Replace a family's fused variant (nullptr: the built one), so the dispatch and its
// first-call check can be tested on any device.
void override_fused(const RopeVariant* rope, const CatVariant* cat, const AdalnVariant* adaln);
void override_fused_qk_norm(const QkNormVariant* qk_norm);
}  // namespace testing

}  // namespace sg::kernels
