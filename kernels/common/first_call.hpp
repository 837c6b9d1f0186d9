// The dispatch state of each family and the first-call check, for the families' op files
// (kernels/<family>/<family>_ops.cpp); the public side (selection, fallbacks, test hooks)
// is dispatch.hpp. An op runs fused only when use_fused() says so.
#pragma once

#include "kernels/common/dispatch.hpp"

#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace sg::kernels {

struct FamilyState {
  bool selected = false;
  ParamValues params;            // complete: defaults filled in
  std::set<std::string> passed;  // ops whose first fused call matched plain
  bool fell_back = false;
  bool inject_mismatch = false;
  const Variant* fused_override = nullptr;  // testing::override_fused
};

// The state of a registered family, valid for the whole process. Throws
// std::invalid_argument for an unknown family.
FamilyState& family_state(const std::string& name);
// Guards every FamilyState's first-call bookkeeping and selection.
std::mutex& dispatch_mutex();

inline const ParamValues kNoParams{};

// The family's fused variant: the test override when one is set (nullptr if it is not a V),
// else the built one.
template <class V>
const V* fused_variant(const FamilyState& fs, const V* built) {
  return fs.fused_override != nullptr ? dynamic_cast<const V*>(fs.fused_override) : built;
}

using OpFn = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

// True when fused and plain agree bit for bit in outputs and in the grads of the
// differentiable inputs (autograd backward with plain's outputs as incoming grads).
bool same_forward_backward(const OpFn& fused, const OpFn& plain,
                           const std::vector<at::Tensor>& inputs,
                           const std::vector<bool>& differentiable);

// Whether this call may run fused: the family is selected and has not fallen back, the
// variant can implement the problem, and the op's first fused call matched plain (checked
// now with `compare` when it is the first; a mismatch makes the family fall back).
bool use_fused(FamilyState& fs, const Variant* fused, const Problem& problem, const char* family,
               const char* op, const std::function<bool()>& compare);

}  // namespace sg::kernels
