// ROPE's op as the model calls it, through the dispatch and its first-call check.
#include "kernels/common/first_call.hpp"
#include "kernels/rope/rope.hpp"

namespace sg::kernels {

at::Tensor rope_apply(const at::Tensor& x, const at::Tensor& table) {
  static FamilyState& fs = family_state("ROPE");
  const auto* fused = fused_variant(fs, fused_rope());
  auto compare = [&] {
    return same_forward_backward(
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{fused->run({in[0], in[1]}, fs.params)};
        },
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{plain_rope().run({in[0], in[1]}, kNoParams)};
        },
        {x, table}, {true, false});
  };
  if (use_fused(fs, fused, rope_problem({x, table}), "ROPE", "rope", compare))
    return fused->run({x, table}, fs.params);
  return plain_rope().run({x, table}, kNoParams);
}

}  // namespace sg::kernels
