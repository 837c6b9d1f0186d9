// ROPE's op as the model calls it, through the dispatch and its first-call check.
#include "kernels/common/first_call.hpp"
#include "kernels/rope/rope.hpp"

namespace sg::kernels {

at::Tensor rope_apply(const at::Tensor& x, const at::Tensor& table) {
  static FamilyState& fs = family_state("ROPE");
  auto call = [](const RopeVariant& v, const std::vector<at::Tensor>& in, const ParamValues& p) {
    return v.run({in[0], in[1]}, p);
  };
  return dispatch_op(fs, fused_variant(fs, fused_rope()), plain_rope(), rope_problem({x, table}),
                     "ROPE", "rope", {x, table}, {true, false}, call);
}

}  // namespace sg::kernels
