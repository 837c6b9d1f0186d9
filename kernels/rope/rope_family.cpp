// ROPE's registry entry (parameters as data), its plain variant and its problem builder.
#include "kernels/rope/rope.hpp"

namespace sg::kernels {
namespace {

class PlainRope final : public PlainVariant<RopeVariant> {
 public:
  at::Tensor run(const RopeArgs& args, const ParamValues&) const override {
    return rope3d_apply_reference(args.x, args.table);
  }

 private:
  bool well_formed(const Problem& problem) const override {
    return problem.shape.size() == 4 && problem.shape[3] % 2 == 0;
  }
};

}  // namespace

// Defaults: the fastest forward + backward row of the H200 sweeps at wam `base` shapes
// (benchmarks/results/kernels_h200.md, 2026-11-30 second sweep); every variant is bitwise
// the plain path, so a default changes speed only.
FamilyInfo rope_family() {
  return cuda_family("ROPE", "FUSED_ROPE", {{"threads", {64, 128, 256}}, {"vec", {1, 2, 4}}},
                     {threads_times_vec_at_most<1024>()}, {{"threads", 128}, {"vec", 2}});
}

const RopeVariant& plain_rope() { return variant_instance<PlainRope>(); }
#if !SPEEDGATE_WITH_CUDA
const RopeVariant* fused_rope() { return nullptr; }
#endif

Problem rope_problem(const RopeArgs& args) {
  if (!args.x.defined() || !args.table.defined()) return {};
  Problem p = base_problem(args.x);
  const auto& x = args.x;
  const auto& t = args.table;
  add_operand(p, t);
  p.operands_match = x.dim() == 4 && t.dim() == 3 && t.scalar_type() == at::kDouble &&
                     t.device() == x.device() && t.size(0) == x.size(1) &&
                     t.size(1) * 2 == x.size(3) && t.size(2) == 2;
  return p;
}

}  // namespace sg::kernels
