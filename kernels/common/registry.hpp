// Kernel families of the wam model (RoPE, [video;action] concat/split, AdaLN chains and
// the linear layers' bias add, q/k RMSNorm),
// their tunable parameters as data, and their variants. The trainer reads this to fill
// the manifest and to pick a variant; the plain variant is always there.
#pragma once

#include "kernels/common/variant.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sg::kernels {

// ROPE: x [B, S, H, D] (D even) rotated by a float64 table [S, D/2, 2] (cos, sin).
struct RopeArgs {
  at::Tensor x;
  at::Tensor table;
};
// CAT: [video; action] along the sequence dim, and the inverse split.
struct CatArgs {
  at::Tensor video;   // [B, Sv, C]
  at::Tensor action;  // [B, Sa, C]
};
// ADALN: layer_norm(x) * (1 + scale) + shift, and x + y * gate.
struct AdalnArgs {
  at::Tensor x;      // [B, S, C]
  at::Tensor shift;  // broadcastable to x
  at::Tensor scale;  // broadcastable to x
  double eps = 1e-6;
};

// QKNORM: RMSNorm of x [B, S, C] with a float32 weight [C]; with a table (defined), the
// result viewed [B, S, heads, C / heads] and rotated by the 3-D RoPE table [S, hd/2, 2].
struct QkNormArgs {
  at::Tensor x;
  at::Tensor weight;
  double eps = 1e-6;
  at::Tensor table;  // undefined: RMSNorm only
  int64_t heads = 1;
};

class RopeVariant : public Variant {
 public:
  virtual at::Tensor run(const RopeArgs& args, const ParamValues& params) const = 0;
};
class CatVariant : public Variant {
 public:
  virtual at::Tensor run(const CatArgs& args, const ParamValues& params) const = 0;
  virtual std::pair<at::Tensor, at::Tensor> split(const at::Tensor& joint, int64_t video_len,
                                                  const ParamValues& params) const = 0;
};
class AdalnVariant : public Variant {
 public:
  virtual at::Tensor run(const AdalnArgs& args, const ParamValues& params) const = 0;
  virtual at::Tensor gated_residual(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate,
                                    const ParamValues& params) const = 0;
  // A linear layer's bias add, y [..., C] += bias [C] float32 (bias_add_reference). May
  // overwrite y. The base runs the reference (a variant without its own kernel for it).
  virtual at::Tensor bias_add(const at::Tensor& y, const at::Tensor& bias, const ParamValues& params) const;
};

class QkNormVariant : public Variant {
 public:
  virtual at::Tensor run(const QkNormArgs& args, const ParamValues& params) const = 0;
};

// One family as the manifest shows it.
struct FamilyInfo {
  std::string name;         // "ROPE"
  std::string env;          // "SG_KERNEL_ROPE": parameter values, e.g. "threads=128,vec=2"
  std::string switch_name;  // the trainer switch that turns the fused variant on
  std::vector<ParamSpec> parameters;
  std::vector<Constraint> constraints;
  bool available = false;   // a fused (non-plain) variant is built into this binary
  std::string unavailable_reason;
  std::vector<std::string> variants;  // variant names, plain first
  ParamValues defaults;               // the fused variant's parameters when SG_KERNEL_<F> omits them
};

const std::vector<FamilyInfo>& families();
// REQUIRES: name is one of families(). Throws std::invalid_argument otherwise.
const FamilyInfo& family(const std::string& name);
// Parses "threads=128,vec=2" against the family: unknown names, values outside the
// searched set and violated constraints (checked with the defaults filling omitted
// parameters) give a non-empty error string. On success *out holds every parameter.
std::string parse_params(const FamilyInfo& family, const std::string& text, ParamValues* out);

// The family's defaults overlaid with the given values.
ParamValues with_defaults(const FamilyInfo& family, const ParamValues& given);
// kSuccess when every parameter is present with a value from its domain and every
// constraint holds; kErrorConstraint otherwise.
Status check_params(const FamilyInfo& family, const ParamValues& params);
// Every parameter combination of the family that satisfies its constraints, in the
// manifest's order (the first parameter varies slowest).
std::vector<ParamValues> legal_params(const FamilyInfo& family);

// The plain variants (ATen reference ops), always available on every device.
const RopeVariant& plain_rope();
const CatVariant& plain_cat();
const AdalnVariant& plain_adaln();
const QkNormVariant& plain_qk_norm();
// The fused CUDA variants; nullptr in a build without CUDA.
const RopeVariant* fused_rope();
const CatVariant* fused_cat();
const AdalnVariant* fused_adaln();
const QkNormVariant* fused_qk_norm();

// Problems built from the actual operands (shape/dtype/device of the main operand,
// contiguity, pointer alignment, and whether the other operands fit): what
// can_implement judges. Undefined tensors give an invalid problem (empty shape).
Problem rope_problem(const RopeArgs& args);
Problem cat_problem(const CatArgs& args);  // shape: the joint [B, Sv + Sa, C]
Problem split_problem(const at::Tensor& joint, int64_t video_len);
Problem adaln_problem(const AdalnArgs& args);
Problem gated_problem(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate);
// shape: y's; operands_match: bias float32 [C] on y's device, C = y's last dim, y 2-D or more.
Problem bias_problem(const at::Tensor& y, const at::Tensor& bias);
// shape: x's [B, S, C], or [B, S, heads, C / heads] when args.table is defined.
Problem qk_norm_problem(const QkNormArgs& args);

}  // namespace sg::kernels
