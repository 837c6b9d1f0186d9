// CAT's ops as the wam model runs them, for the timing harness (kernels/common/timing/).
#include "kernels/cat/cat.hpp"
#include "kernels/common/timing/case_helpers.hpp"

namespace sg::kernels {

using cases::CaseDims;
using cases::Inputs;

std::vector<OpCase> cat_op_cases(const KernelShape& s, int input_sets) {
  const CaseDims d(s);
  const int64_t b = d.b, tv = d.tv, ta = d.ta, dv = d.dv;
  std::vector<OpCase> out;
  // q/k [video; action] float32, v in the linear's dtype; the attention output's split.
  std::vector<at::ScalarType> dtypes{at::kFloat};
  if (d.low != at::kFloat) dtypes.push_back(d.low);
  for (auto dtype : dtypes) {
    OpCase c{std::string("cat ") + c10::toString(dtype),
             "CAT",
             2.0 * b * (tv + ta) * dv * c10::elementSize(dtype),
             cases::make_sets(input_sets,
                              [&] {
                                return Inputs{at::randn({b, tv, dv}, d.opts).to(dtype),
                                              at::randn({b, ta, dv}, d.opts).to(dtype)};
                              }),
             {}};
    c.run = [](const Inputs& in, const ParamValues* p) {
      return Inputs{cases::pick(fused_cat(), plain_cat(), p).run({in[0], in[1]}, cases::values(p))};
    };
    out.push_back(std::move(c));
  }
  OpCase split{std::string("split ") + d.low_name,
               "CAT",
               2.0 * b * (tv + ta) * dv * c10::elementSize(d.low),
               cases::make_sets(input_sets,
                                [&] {
                                  return Inputs{at::randn({b, tv + ta, dv}, d.opts).to(d.low)};
                                }),
               {}};
  split.run = [tv](const Inputs& in, const ParamValues* p) {
    auto [v, a] = cases::pick(fused_cat(), plain_cat(), p).split(in[0], tv, cases::values(p));
    return Inputs{v, a};
  };
  out.push_back(std::move(split));
  return out;
}

}  // namespace sg::kernels
