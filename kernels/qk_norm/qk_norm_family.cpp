// QKNORM's registry entry (parameters as data), its plain variant and its problem builder.
#include "kernels/qk_norm/qk_norm.hpp"

namespace sg::kernels {
namespace {

class PlainQkNorm final : public PlainVariant<QkNormVariant> {
 public:
  at::Tensor run(const QkNormArgs& args, const ParamValues&) const override {
    if (args.table.defined())
      return rms_norm_rope_reference(args.x, args.weight, args.eps, args.table, args.heads);
    return rms_norm_reference(args.x, args.weight, args.eps);
  }
};

}  // namespace

// Defaults: the fastest forward + backward row of the H200 sweeps at wam `base` shapes
// (benchmarks/results/kernels_h200.md: 2026-11-30 second sweep, row_warps 2026-12-02).
// row_warps: warps a row in the one-pass forward (2: each holds half a lane's vectors, for
// rows of up to 1536 elements; vec applies to the other passes).
FamilyInfo qk_norm_family() {
  return cuda_family("QKNORM", "FUSED_QK_NORM",
                     {{"threads", {128, 256, 512}}, {"vec", {1, 2, 4}}, {"row_warps", {1, 2}}},
                     {threads_times_vec_at_most<2048>()},
                     {{"threads", 128}, {"vec", 4}, {"row_warps", 2}});
}

const QkNormVariant& plain_qk_norm() { return variant_instance<PlainQkNorm>(); }
#if !SPEEDGATE_WITH_CUDA
const QkNormVariant* fused_qk_norm() { return nullptr; }
#endif

Problem qk_norm_problem(const QkNormArgs& args) {
  const auto& x = args.x;
  const auto& w = args.weight;
  if (!x.defined() || !w.defined()) return {};
  Problem p = base_problem(x);
  add_operand(p, w);
  p.operands_match = x.dim() == 3 && w.dim() == 1 && w.scalar_type() == at::kFloat &&
                     w.device() == x.device() && w.size(0) == x.size(2);
  if (!args.table.defined() || !p.operands_match) return p;
  const auto& t = args.table;
  const int64_t heads = args.heads, c = x.size(2);
  p.operands_match = heads > 0 && c % heads == 0 && (c / heads) % 2 == 0 && t.dim() == 3 &&
                     t.scalar_type() == at::kDouble && t.device() == x.device() &&
                     t.size(0) == x.size(1) && t.size(1) * 2 == c / heads && t.size(2) == 2;
  if (!p.operands_match) return p;
  p.shape = {x.size(0), x.size(1), heads, c / heads};
  add_operand(p, t);
  return p;
}

}  // namespace sg::kernels
