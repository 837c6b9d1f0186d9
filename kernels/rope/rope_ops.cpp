// ROPE's op as the model calls it, through the dispatch and its first-call check.
#include "kernels/common/first_call.hpp"
#include "kernels/rope/rope.hpp"

namespace sg::kernels {

at::Tensor rope_apply(const at::Tensor& x, const at::Tensor& table) {
  static const FamilyDispatch<RopeVariant> kRope("ROPE", fused_rope(), plain_rope());
  return kRope.run(rope_problem({x, table}), "rope", {x, table}, {true, false}, run_on_inputs);
}

}  // namespace sg::kernels
