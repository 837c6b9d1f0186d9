// The kernel families, their tunable parameters and constraints (data), the plain
// variants that compose the reference ops, and the fused CUDA variants (kernels/fused/,
// linked only when SPEEDGATE_WITH_CUDA; a CPU build reports available=false with a reason).
#include "kernels/common/registry.hpp"

#include "kernels/rope/rope.hpp"
#if SPEEDGATE_WITH_CUDA
#include "kernels/common/fused_checks.hpp"
#endif

#include <algorithm>
#include <cstdint>

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
constexpr bool kFusedBuilt = true;
constexpr const char* kNoFusedReason = "";
#else
constexpr bool kFusedBuilt = false;
constexpr const char* kNoFusedReason = "no CUDA in this build (SPEEDGATE_WITH_CUDA=0): fused kernels are CUDA-only";
#endif

std::vector<std::string> variant_names() {
  if (kFusedBuilt) return {"plain_aten", "fused_cuda"};
  return {"plain_aten"};
}

// Largest power of two (<= 256) dividing the tensor's data address.
int64_t alignment_of(const at::Tensor& t) {
  const auto a = reinterpret_cast<uintptr_t>(t.data_ptr());
  int64_t align = 256;
  while (align > 1 && a % static_cast<uintptr_t>(align) != 0) align /= 2;
  return align;
}

// A [Bm, 1, C] modulation vector for rows x [B, S, C]: float32, Bm in {1, B}, unit stride
// along C (a chunk of the [B, 6, C] modulation tensor qualifies).
bool fits_modulation(const at::Tensor& m, const at::Tensor& x) {
  return m.defined() && m.dim() == 3 && x.dim() == 3 && m.scalar_type() == at::kFloat &&
         m.device() == x.device() && m.size(1) == 1 && m.size(2) == x.size(2) &&
         (m.size(0) == 1 || m.size(0) == x.size(0)) && (m.stride(2) == 1 || m.size(2) == 1);
}

Problem base_problem(const at::Tensor& main) {
  Problem p;
  p.shape = main.sizes().vec();
  p.dtype = main.scalar_type();
  p.device = main.device().type();
  p.contiguous = main.is_contiguous();
  p.alignment_bytes = alignment_of(main);
  return p;
}

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

class PlainQkNorm final : public QkNormVariant {
 public:
  std::string name() const override { return "plain_aten"; }
  Status can_implement(const Problem& problem, const ParamValues&) const override {
    return problem.shape.empty() ? Status::kErrorInvalidProblem : Status::kSuccess;
  }
  at::Tensor run(const QkNormArgs& args, const ParamValues&) const override {
    if (args.table.defined()) return rms_norm_rope_reference(args.x, args.weight, args.eps, args.table, args.heads);
    return rms_norm_reference(args.x, args.weight, args.eps);
  }
};

// Defaults: the fastest forward + backward rows of the H200 sweeps at wam `base` shapes
// (benchmarks/results/kernels_h200.md: 2026-11-30 second sweep; QKNORM row_warps and ADALN
// row_threads 2026-12-02); every variant is bitwise the plain path, so a default changes
// speed only.
std::vector<FamilyInfo> build_families() {
  std::vector<FamilyInfo> out;
  out.push_back({"ROPE", "SG_KERNEL_ROPE", "FUSED_ROPE",
                 {{"threads", {64, 128, 256}}, {"vec", {1, 2, 4}}},
                 {{"threads*vec<=1024", [](const ParamValues& p) { return get(p, "threads") * get(p, "vec") <= 1024; }}},
                 kFusedBuilt, kNoFusedReason, variant_names(), {{"threads", 128}, {"vec", 2}}});
  // flat=1: one grid-stride loop over all units (rows_per_block does not apply: 1).
  out.push_back({"CAT", "SG_KERNEL_CAT", "FAST_CAT",
                 {{"threads", {128, 256, 512}}, {"rows_per_block", {1, 2, 4}}, {"flat", {0, 1}}},
                 {{"threads*rows_per_block<=1024",
                   [](const ParamValues& p) { return get(p, "threads") * get(p, "rows_per_block") <= 1024; }},
                  {"flat*rows_per_block<=1",
                   [](const ParamValues& p) { return get(p, "flat") == 0 || get(p, "rows_per_block") <= 1; }}},
                 kFusedBuilt, kNoFusedReason, variant_names(), {{"threads", 128}, {"rows_per_block", 2}, {"flat", 0}}});
  // pack: consecutive elements per access (4: 16-byte float / 8-byte bf16 vector
  // accesses where C % 4 == 0 and the operands are aligned, else 1). row_threads: threads
  // per row where modulate computes the LayerNorm inside (each plays 128 / row_threads of
  // ATen's 128 row threads; vec and pack apply to the other paths, row_threads only there).
  out.push_back({"ADALN", "SG_KERNEL_ADALN", "FUSED_ADALN",
                 {{"threads", {128, 256, 512}}, {"vec", {1, 2, 4}}, {"pack", {1, 4}}, {"row_threads", {32, 64, 128}}},
                 {{"threads*vec<=2048", [](const ParamValues& p) { return get(p, "threads") * get(p, "vec") <= 2048; }}},
                 kFusedBuilt, kNoFusedReason, variant_names(),
                 {{"threads", 128}, {"vec", 1}, {"pack", 4}, {"row_threads", 128}}});
  // row_warps: warps a row in the one-pass forward (2: each holds half a lane's vectors, for
  // rows of up to 1536 elements; vec applies to the other passes).
  out.push_back({"QKNORM", "SG_KERNEL_QKNORM", "FUSED_QK_NORM",
                 {{"threads", {128, 256, 512}}, {"vec", {1, 2, 4}}, {"row_warps", {1, 2}}},
                 {{"threads*vec<=2048", [](const ParamValues& p) { return get(p, "threads") * get(p, "vec") <= 2048; }}},
                 kFusedBuilt, kNoFusedReason, variant_names(), {{"threads", 128}, {"vec", 4}, {"row_warps", 2}}});
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
  values = with_defaults(fam, values);
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
const QkNormVariant& plain_qk_norm() {
  static const PlainQkNorm kPlain;
  return kPlain;
}

ParamValues with_defaults(const FamilyInfo& fam, const ParamValues& given) {
  ParamValues out = fam.defaults;
  for (const auto& [k, v] : given) out[k] = v;
  return out;
}

Status check_params(const FamilyInfo& fam, const ParamValues& params) {
  for (const auto& spec : fam.parameters) {
    auto it = params.find(spec.name);
    if (it == params.end()) return Status::kErrorConstraint;
    if (std::find(spec.values.begin(), spec.values.end(), it->second) == spec.values.end()) {
      return Status::kErrorConstraint;
    }
  }
  for (const auto& c : fam.constraints) {
    if (c.holds != nullptr && !c.holds(params)) return Status::kErrorConstraint;
  }
  return Status::kSuccess;
}

#if SPEEDGATE_WITH_CUDA
const RopeVariant* fused_rope() { return &fused_rope_variant(); }
const CatVariant* fused_cat() { return &fused_cat_variant(); }
const AdalnVariant* fused_adaln() { return &fused_adaln_variant(); }
const QkNormVariant* fused_qk_norm() { return &fused_qk_norm_variant(); }
#else
const RopeVariant* fused_rope() { return nullptr; }
const CatVariant* fused_cat() { return nullptr; }
const AdalnVariant* fused_adaln() { return nullptr; }
const QkNormVariant* fused_qk_norm() { return nullptr; }
#endif

Problem rope_problem(const RopeArgs& args) {
  if (!args.x.defined() || !args.table.defined()) return {};
  Problem p = base_problem(args.x);
  const auto& x = args.x;
  const auto& t = args.table;
  p.contiguous = p.contiguous && t.is_contiguous();
  p.alignment_bytes = std::min(p.alignment_bytes, alignment_of(t));
  p.operands_match = x.dim() == 4 && t.dim() == 3 && t.scalar_type() == at::kDouble && t.device() == x.device() &&
                     t.size(0) == x.size(1) && t.size(1) * 2 == x.size(3) && t.size(2) == 2;
  return p;
}

Problem cat_problem(const CatArgs& args) {
  const auto& v = args.video;
  const auto& a = args.action;
  if (!v.defined() || !a.defined()) return {};
  Problem p = base_problem(v);
  p.operands_match = v.dim() == 3 && a.dim() == 3 && a.scalar_type() == v.scalar_type() &&
                     a.device() == v.device() && a.size(0) == v.size(0) && a.size(2) == v.size(2);
  if (p.operands_match) p.shape = {v.size(0), v.size(1) + a.size(1), v.size(2)};
  p.contiguous = p.contiguous && a.is_contiguous();
  p.alignment_bytes = std::min(p.alignment_bytes, alignment_of(a));
  return p;
}

Problem split_problem(const at::Tensor& joint, int64_t video_len) {
  if (!joint.defined()) return {};
  Problem p = base_problem(joint);
  p.operands_match = joint.dim() == 3 && video_len > 0 && video_len < joint.size(1);
  return p;
}

Problem adaln_problem(const AdalnArgs& args) {
  if (!args.x.defined()) return {};
  Problem p = base_problem(args.x);
  p.operands_match = fits_modulation(args.shift, args.x) && fits_modulation(args.scale, args.x);
  return p;
}

Problem gated_problem(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate) {
  if (!x.defined() || !y.defined()) return {};
  Problem p = base_problem(x);
  p.contiguous = p.contiguous && y.is_contiguous();
  p.alignment_bytes = std::min(p.alignment_bytes, alignment_of(y));
  p.operands_match = y.sizes() == x.sizes() && y.device() == x.device() &&
                     (y.scalar_type() == at::kFloat || y.scalar_type() == at::kBFloat16) &&
                     fits_modulation(gate, x);
  return p;
}

at::Tensor AdalnVariant::bias_add(const at::Tensor& y, const at::Tensor& bias, const ParamValues&) const {
  return bias_add_reference(y, bias);
}

Problem bias_problem(const at::Tensor& y, const at::Tensor& bias) {
  if (!y.defined() || !bias.defined()) return {};
  Problem p = base_problem(y);
  p.contiguous = p.contiguous && bias.is_contiguous();
  p.alignment_bytes = std::min(p.alignment_bytes, alignment_of(bias));
  p.operands_match = y.dim() >= 2 && bias.dim() == 1 && bias.scalar_type() == at::kFloat &&
                     bias.device() == y.device() && bias.size(0) == y.size(-1);
  return p;
}

Problem qk_norm_problem(const QkNormArgs& args) {
  const auto& x = args.x;
  const auto& w = args.weight;
  if (!x.defined() || !w.defined()) return {};
  Problem p = base_problem(x);
  p.contiguous = p.contiguous && w.is_contiguous();
  p.alignment_bytes = std::min(p.alignment_bytes, alignment_of(w));
  p.operands_match = x.dim() == 3 && w.dim() == 1 && w.scalar_type() == at::kFloat && w.device() == x.device() &&
                     w.size(0) == x.size(2);
  if (!args.table.defined() || !p.operands_match) return p;
  const auto& t = args.table;
  const int64_t heads = args.heads, c = x.size(2);
  p.operands_match = heads > 0 && c % heads == 0 && (c / heads) % 2 == 0 && t.dim() == 3 &&
                     t.scalar_type() == at::kDouble && t.device() == x.device() && t.size(0) == x.size(1) &&
                     t.size(1) * 2 == c / heads && t.size(2) == 2;
  if (!p.operands_match) return p;
  p.shape = {x.size(0), x.size(1), heads, c / heads};
  p.contiguous = p.contiguous && t.is_contiguous();
  p.alignment_bytes = std::min(p.alignment_bytes, alignment_of(t));
  return p;
}

std::vector<ParamValues> legal_params(const FamilyInfo& family) {
  std::vector<ParamValues> all{{}};
  for (const auto& spec : family.parameters) {
    std::vector<ParamValues> next;
    for (const auto& partial : all) {
      for (auto v : spec.values) {
        auto p = partial;
        p[spec.name] = v;
        next.push_back(p);
      }
    }
    all = std::move(next);
  }
  std::vector<ParamValues> legal;
  for (const auto& p : all) {
    if (check_params(family, p) == Status::kSuccess) legal.push_back(p);
  }
  return legal;
}

}  // namespace sg::kernels
