// The registered kernel families, in manifest order. Adding a family: its folder
// kernels/<family>/ plus one line here (docs/kernels.md, "Adding a family").
#include "kernels/adaln/adaln.hpp"
#include "kernels/cat/cat.hpp"
#include "kernels/common/registry.hpp"
#include "kernels/common/timing/op_cases.hpp"
#include "kernels/qk_norm/qk_norm.hpp"
#include "kernels/rope/rope.hpp"

namespace sg::kernels {

const std::vector<FamilyRegistration>& registrations() {
  static const std::vector<FamilyRegistration> kRegistered{
      {rope_family, rope_op_cases},
      {cat_family, cat_op_cases},
      {adaln_family, adaln_op_cases},
      {qk_norm_family, qk_norm_op_cases},
  };
  return kRegistered;
}

}  // namespace sg::kernels
