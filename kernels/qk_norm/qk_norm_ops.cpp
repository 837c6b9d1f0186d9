// QKNORM's ops as the model calls them, through the dispatch and its first-call check.
// rms_norm_rope runs fused only when ROPE is selected too (and has not fallen back).
#include "kernels/common/first_call.hpp"
#include "kernels/qk_norm/qk_norm.hpp"

namespace sg::kernels {
namespace {

const FamilyDispatch<QkNormVariant>& qk_norm_dispatch() {
  static const FamilyDispatch<QkNormVariant> kQkNorm("QKNORM", fused_qk_norm(), plain_qk_norm());
  return kQkNorm;
}

}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  return qk_norm_dispatch().run(
      qk_norm_problem({x, weight, eps, at::Tensor(), 1}), "norm", {x, weight}, {true, true},
      [eps](const QkNormVariant& v, const std::vector<at::Tensor>& in, const ParamValues& p) {
        return v.run({in[0], in[1], eps, at::Tensor(), 1}, p);
      });
}

at::Tensor rms_norm_rope(const at::Tensor& x, const at::Tensor& weight, double eps,
                         const at::Tensor& table, int64_t heads) {
  const auto& dispatch = qk_norm_dispatch();
  auto& fs = dispatch.state();
  const auto* fused = dispatch.fused();
  const QkNormArgs args{x, weight, eps, table, heads};
  auto call = [eps, heads](const QkNormVariant& v, const std::vector<at::Tensor>& in,
                           const ParamValues& p) {
    return v.run({in[0], in[1], eps, in[2], heads}, p);
  };
  const std::vector<at::Tensor> inputs{x, weight, table};
  const std::vector<bool> differentiable{true, true, false};
  const auto compare =
      first_call_compare(fs, fused, dispatch.plain(), inputs, differentiable, call);
  static const FamilyState& rope = family_state("ROPE");
  const bool rope_on = rope.selected && !rope.fell_back;
  if (rope_on && use_fused(fs, fused, qk_norm_problem(args), "QKNORM", "norm_rope", compare)) {
    return fused->run(args, fs.params);
  }
  const int64_t b = x.size(0), s = x.size(1), c = x.size(2);
  return rope_apply(rms_norm(x, weight, eps).view({b, s, heads, c / heads}), table);
}

}  // namespace sg::kernels
