// CAT's registry entry (parameters as data), its plain variant and its problem builders.
#include "kernels/cat/cat.hpp"

namespace sg::kernels {
namespace {

class PlainCat final : public PlainVariant<CatVariant> {
 public:
  at::Tensor run(const CatArgs& args, const ParamValues&) const override {
    return joint_cat_reference(args.video, args.action);
  }
  std::pair<at::Tensor, at::Tensor> split(const at::Tensor& joint, int64_t video_len,
                                          const ParamValues&) const override {
    return joint_split_reference(joint, video_len);
  }

 private:
  bool well_formed(const Problem& problem) const override { return problem.shape.size() == 3; }
};

}  // namespace

// Defaults: the fastest forward + backward row of the H200 sweeps at wam `base` shapes
// (benchmarks/results/kernels_h200.md, 2026-11-30 second sweep); every variant is bitwise
// the plain path. flat=1: one grid-stride loop over all units (rows_per_block does not
// apply: 1).
FamilyInfo cat_family() {
  return cuda_family(
      "CAT", "FAST_CAT",
      {{"threads", {128, 256, 512}}, {"rows_per_block", {1, 2, 4}}, {"flat", {0, 1}}},
      {{"threads*rows_per_block<=1024",
        [](const ParamValues& p) {
          return param(p, "threads") * param(p, "rows_per_block") <= 1024;
        }},
       {"flat*rows_per_block<=1",
        [](const ParamValues& p) {
          return param(p, "flat") == 0 || param(p, "rows_per_block") <= 1;
        }}},
      {{"threads", 128}, {"rows_per_block", 2}, {"flat", 0}});
}

const CatVariant& plain_cat() { return variant_instance<PlainCat>(); }
#if !SPEEDGATE_WITH_CUDA
const CatVariant* fused_cat() { return nullptr; }
#endif

Problem cat_problem(const CatArgs& args) {
  const auto& v = args.video;
  const auto& a = args.action;
  if (!v.defined() || !a.defined()) return {};
  Problem p = base_problem(v);
  p.operands_match = v.dim() == 3 && a.dim() == 3 && a.scalar_type() == v.scalar_type() &&
                     a.device() == v.device() && a.size(0) == v.size(0) && a.size(2) == v.size(2);
  if (p.operands_match) p.shape = {v.size(0), v.size(1) + a.size(1), v.size(2)};
  add_operand(p, a);
  return p;
}

Problem split_problem(const at::Tensor& joint, int64_t video_len) {
  if (!joint.defined()) return {};
  Problem p = base_problem(joint);
  p.operands_match = joint.dim() == 3 && video_len > 0 && video_len < joint.size(1);
  return p;
}

}  // namespace sg::kernels
