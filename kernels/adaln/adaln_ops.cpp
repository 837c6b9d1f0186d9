// ADALN's ops as the model calls them, through the dispatch and its first-call check.
#include "kernels/adaln/adaln.hpp"
#include "kernels/common/first_call.hpp"

namespace sg::kernels {
namespace {

const FamilyDispatch<AdalnVariant>& adaln_dispatch() {
  static const FamilyDispatch<AdalnVariant> kAdaln("ADALN", fused_adaln(), plain_adaln());
  return kAdaln;
}

// Dispatches one ADALN op: call(variant, inputs, params), every input differentiable.
template <class Call>
at::Tensor adaln_op(const Problem& problem, const char* op, const std::vector<at::Tensor>& inputs,
                    const Call& call) {
  return adaln_dispatch().run(problem, op, inputs, std::vector<bool>(inputs.size(), true), call);
}

}  // namespace

at::Tensor adaln_modulate(const at::Tensor& x, const at::Tensor& shift, const at::Tensor& scale,
                          double eps) {
  return adaln_op(
      adaln_problem({x, shift, scale, eps}), "modulate", {x, shift, scale},
      [eps](const AdalnVariant& v, const std::vector<at::Tensor>& in, const ParamValues& p) {
        return v.run({in[0], in[1], in[2], eps}, p);
      });
}

at::Tensor gated_residual(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate) {
  return adaln_op(gated_problem(x, y, gate), "gated", {x, y, gate},
                  [](const AdalnVariant& v, const std::vector<at::Tensor>& in,
                     const ParamValues& p) { return v.gated_residual(in[0], in[1], in[2], p); });
}

at::Tensor bias_add(const at::Tensor& y, const at::Tensor& bias) {
  return adaln_op(bias_problem(y, bias), "bias", {y, bias},
                  [](const AdalnVariant& v, const std::vector<at::Tensor>& in,
                     const ParamValues& p) { return v.bias_add(in[0], in[1], p); });
}

}  // namespace sg::kernels
