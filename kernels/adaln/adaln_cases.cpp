// ADALN's ops as the wam model runs them, for the timing harness (kernels/common/timing/).
#include "kernels/adaln/adaln.hpp"
#include "kernels/common/timing/case_helpers.hpp"

#include <string>

namespace sg::kernels {

using cases::AutocastIf;
using cases::CaseDims;
using cases::Inputs;

namespace {

// The bias add of a linear's output (F::linear's `output += bias`) at a width. The plain add
// works in place on its input, as on the matmul output it gets in the model, so every
// variant gets a fresh copy of the set's y (the same copy for each: the ranking sees only
// the add; the times include the copy).
OpCase bias_case(const CaseDims& d, int64_t width, int input_sets) {
  OpCase add{std::string("bias ") + d.low_name + " [" + std::to_string(width) + "]",
             "ADALN",
             double(d.b) * d.tv * width * 2 * c10::elementSize(d.low) + 4.0 * width,
             cases::make_sets(input_sets,
                              [&] {
                                return Inputs{at::randn({d.b, d.tv, width}, d.opts).to(d.low),
                                              at::randn({width}, d.opts)};
                              }),
             {}};
  add.run = [](const Inputs& in, const ParamValues* p) {
    return Inputs{cases::pick(fused_adaln(), plain_adaln(), p)
                      .bias_add(in[0].clone(), in[1], cases::values(p))};
  };
  return add;
}

}  // namespace

std::vector<OpCase> adaln_op_cases(const KernelShape& s, int input_sets) {
  const CaseDims d(s);
  const int64_t b = d.b, tv = d.tv, dv = d.dv;
  const auto& opts = d.opts;
  const at::ScalarType low = d.low;
  std::vector<OpCase> out;
  // modulate: rows in the linear's dtype -> float32; modulation vectors are chunks of
  // [B, 6, C] (shift, scale, gate, ...). Gated residual: float32 x + low y * gate.
  OpCase mod{std::string("modulate ") + d.low_name + d.autocast_name,
             "ADALN",
             double(b) * tv * dv * (c10::elementSize(low) + 4),
             cases::make_sets(input_sets,
                              [&] {
                                auto m = at::randn({b, 6, dv}, opts).chunk(6, 1);
                                return Inputs{at::randn({b, tv, dv}, opts).to(low), m[0], m[1]};
                              }),
             {}};
  mod.run = [cuda = d.cuda](const Inputs& in, const ParamValues* p) {
    AutocastIf autocast(cuda);
    return Inputs{cases::pick(fused_adaln(), plain_adaln(), p)
                      .run(AdalnArgs{in[0], in[1], in[2], 1e-6}, cases::values(p))};
  };
  out.push_back(std::move(mod));
  OpCase gated{
      std::string("gated fp32+") + d.low_name,
      "ADALN",
      double(b) * tv * dv * (4 + c10::elementSize(low) + 4),
      cases::make_sets(
          input_sets,
          [&] {
            auto m = at::randn({b, 6, dv}, opts).chunk(6, 1);
            return Inputs{at::randn({b, tv, dv}, opts), at::randn({b, tv, dv}, opts).to(low), m[2]};
          }),
      {}};
  gated.run = [](const Inputs& in, const ParamValues* p) {
    return Inputs{cases::pick(fused_adaln(), plain_adaln(), p)
                      .gated_residual(in[0], in[1], in[2], cases::values(p))};
  };
  out.push_back(std::move(gated));
  // The attention and MLP output widths.
  for (int64_t width : {dv, 4 * dv}) out.push_back(bias_case(d, width, input_sets));
  return out;
}

}  // namespace sg::kernels
