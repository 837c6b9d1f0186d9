// The kernel families, their tunable parameters and constraints (data), and the plain
// variants that compose the reference ops. Fused CUDA variants register here when the
// Kernels issue lands; until then every family reports available=false with a reason.
#include "kernels/registry/families.hpp"

#include "kernels/reference/reference_ops.hpp"

#include <sstream>
#include <stdexcept>

namespace sg::kernels {

const char* to_string(Status status) {
  switch (status) {
    case Status::kSuccess: return "success";
    case Status::kErrorNotSupported: return "not_supported";
    case Status::kErrorInvalidProblem: return "invalid_problem";
    case Status::kErrorUnavailable: return "unavailable";
    case Status::kErrorConstraint: return "constraint_violated";
  }
  return "unknown";
}

namespace {

#if SPEEDGATE_WITH_CUDA
constexpr const char* kNoFusedReason =
    "fused CUDA kernels are not implemented yet (Kernels issue); only the plain variant exists";
#else
constexpr const char* kNoFusedReason = "no CUDA in this build (SPEEDGATE_WITH_CUDA=0): fused kernels are CUDA-only";
#endif

int64_t get(const ParamValues& p, const char* name) {
  auto it = p.find(name);
  return it == p.end() ? 1 : it->second;
}

class PlainRope final : public RopeVariant {
 public:
  std::string name() const override { return "plain_aten"; }
  Status can_implement(const Problem& problem, const ParamValues&) const override {
    if (problem.shape.size() != 4 || problem.shape[3] % 2 != 0) return Status::kErrorInvalidProblem;
    return Status::kSuccess;
  }
  at::Tensor run(const RopeArgs& args, const ParamValues&) const override {
    return rope3d_apply_reference(args.x, args.table);
  }
};

class PlainCat final : public CatVariant {
 public:
  std::string name() const override { return "plain_aten"; }
  Status can_implement(const Problem& problem, const ParamValues&) const override {
    return problem.shape.size() == 3 ? Status::kSuccess : Status::kErrorInvalidProblem;
  }
  at::Tensor run(const CatArgs& args, const ParamValues&) const override {
    return joint_cat_reference(args.video, args.action);
  }
  std::pair<at::Tensor, at::Tensor> split(const at::Tensor& joint, int64_t video_len,
                                          const ParamValues&) const override {
    return joint_split_reference(joint, video_len);
  }
};

class PlainAdaln final : public AdalnVariant {
 public:
  std::string name() const override { return "plain_aten"; }
  Status can_implement(const Problem& problem, const ParamValues&) const override {
    return problem.shape.empty() ? Status::kErrorInvalidProblem : Status::kSuccess;
  }
  at::Tensor run(const AdalnArgs& args, const ParamValues&) const override {
    return adaln_modulate_reference(args.x, args.shift, args.scale, args.eps);
  }
  at::Tensor gated_residual(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate,
                            const ParamValues&) const override {
    return gated_residual_reference(x, y, gate);
  }
};

std::vector<FamilyInfo> build_families() {
  std::vector<FamilyInfo> out;
  out.push_back({"ROPE", "SG_KERNEL_ROPE", "FUSED_ROPE",
                 {{"threads", {64, 128, 256}}, {"vec", {1, 2, 4}}},
                 {{"threads*vec<=1024", [](const ParamValues& p) { return get(p, "threads") * get(p, "vec") <= 1024; }}},
                 false, kNoFusedReason, {"plain_aten"}});
  out.push_back({"CAT", "SG_KERNEL_CAT", "FAST_CAT",
                 {{"threads", {128, 256, 512}}, {"rows_per_block", {1, 2, 4}}},
                 {{"threads*rows_per_block<=1024",
                   [](const ParamValues& p) { return get(p, "threads") * get(p, "rows_per_block") <= 1024; }}},
                 false, kNoFusedReason, {"plain_aten"}});
  out.push_back({"ADALN", "SG_KERNEL_ADALN", "FUSED_ADALN",
                 {{"threads", {128, 256, 512}}, {"vec", {1, 2, 4}}},
                 {{"threads*vec<=2048", [](const ParamValues& p) { return get(p, "threads") * get(p, "vec") <= 2048; }}},
                 false, kNoFusedReason, {"plain_aten"}});
  return out;
}

}  // namespace

const std::vector<FamilyInfo>& families() {
  static const std::vector<FamilyInfo> kFamilies = build_families();
  return kFamilies;
}

const FamilyInfo& family(const std::string& name) {
  for (const auto& f : families()) {
    if (f.name == name) return f;
  }
  throw std::invalid_argument("unknown kernel family: " + name);
}

std::string parse_params(const FamilyInfo& fam, const std::string& text, ParamValues* out) {
  ParamValues values;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos) return "expected name=value, got '" + item + "'";
    const std::string key = item.substr(0, eq);
    const std::string val = item.substr(eq + 1);
    const ParamSpec* spec = nullptr;
    for (const auto& p : fam.parameters) {
      if (p.name == key) spec = &p;
    }
    if (spec == nullptr) return "unknown parameter '" + key + "' of kernel family " + fam.name;
    int64_t v = 0;
    try {
      size_t used = 0;
      v = std::stoll(val, &used);
      if (used != val.size()) throw std::invalid_argument(val);
    } catch (const std::exception&) {
      return "parameter '" + key + "' needs an integer, got '" + val + "'";
    }
    bool ok = false;
    for (int64_t allowed : spec->values) ok = ok || allowed == v;
    if (!ok) return "parameter '" + key + "'=" + val + " is outside its domain";
    values[key] = v;
  }
  for (const auto& c : fam.constraints) {
    if (c.holds != nullptr && !c.holds(values)) return "constraint violated: " + c.text;
  }
  if (out != nullptr) *out = values;
  return "";
}

const RopeVariant& plain_rope() {
  static const PlainRope kPlain;
  return kPlain;
}
const CatVariant& plain_cat() {
  static const PlainCat kPlain;
  return kPlain;
}
const AdalnVariant& plain_adaln() {
  static const PlainAdaln kPlain;
  return kPlain;
}

}  // namespace sg::kernels
