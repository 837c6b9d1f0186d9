// ADALN's ops as the model calls them, through the dispatch and its first-call check.
#include "kernels/adaln/adaln.hpp"
#include "kernels/common/first_call.hpp"

namespace sg::kernels {
namespace {

FamilyState& adaln_state() {
  static FamilyState& fs = family_state("ADALN");
  return fs;
}

}  // namespace

at::Tensor adaln_modulate(const at::Tensor& x, const at::Tensor& shift, const at::Tensor& scale,
                          double eps) {
  auto& fs = adaln_state();
  const auto* fused = fused_variant(fs, fused_adaln());
  auto compare = [&] {
    return same_forward_backward(
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{fused->run({in[0], in[1], in[2], eps}, fs.params)};
        },
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{plain_adaln().run({in[0], in[1], in[2], eps}, kNoParams)};
        },
        {x, shift, scale}, {true, true, true});
  };
  const AdalnArgs args{x, shift, scale, eps};
  if (use_fused(fs, fused, adaln_problem(args), "ADALN", "modulate", compare))
    return fused->run(args, fs.params);
  return plain_adaln().run(args, kNoParams);
}

at::Tensor gated_residual(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate) {
  auto& fs = adaln_state();
  const auto* fused = fused_variant(fs, fused_adaln());
  auto compare = [&] {
    return same_forward_backward(
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{fused->gated_residual(in[0], in[1], in[2], fs.params)};
        },
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{
              plain_adaln().gated_residual(in[0], in[1], in[2], kNoParams)};
        },
        {x, y, gate}, {true, true, true});
  };
  if (use_fused(fs, fused, gated_problem(x, y, gate), "ADALN", "gated", compare)) {
    return fused->gated_residual(x, y, gate, fs.params);
  }
  return plain_adaln().gated_residual(x, y, gate, kNoParams);
}

at::Tensor bias_add(const at::Tensor& y, const at::Tensor& bias) {
  auto& fs = adaln_state();
  const auto* fused = fused_variant(fs, fused_adaln());
  auto compare = [&] {
    return same_forward_backward(
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{fused->bias_add(in[0], in[1], fs.params)};
        },
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{plain_adaln().bias_add(in[0], in[1], kNoParams)};
        },
        {y, bias}, {true, true});
  };
  if (use_fused(fs, fused, bias_problem(y, bias), "ADALN", "bias", compare))
    return fused->bias_add(y, bias, fs.params);
  return plain_adaln().bias_add(y, bias, kNoParams);
}

}  // namespace sg::kernels
