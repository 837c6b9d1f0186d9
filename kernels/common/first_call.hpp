// The dispatch state of each family and the first-call check, for the families' op files
// (kernels/<family>/<family>_ops.cpp); the public side (selection, fallbacks, test hooks)
// is dispatch.hpp. An op runs fused only when use_fused() says so.
#pragma once

#include "kernels/common/dispatch.hpp"

#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <utility>
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

// An op's outputs as the list the first-call check compares.
inline std::vector<at::Tensor> as_tensor_list(const at::Tensor& t) { return {t}; }
inline std::vector<at::Tensor> as_tensor_list(const std::pair<at::Tensor, at::Tensor>& p) {
  return {p.first, p.second};
}

// The first-call comparison of one op: call(variant, inputs, params) runs the op with a
// variant, once with the fused one (fs.params) and once with plain (no parameters).
template <class V, class Call>
std::function<bool()> first_call_compare(const FamilyState& fs, const V* fused, const V& plain,
                                         const std::vector<at::Tensor>& inputs,
                                         const std::vector<bool>& differentiable,
                                         const Call& call) {
  return [&fs, fused, &plain, &inputs, &differentiable, &call] {
    return same_forward_backward(
        [&](const std::vector<at::Tensor>& in) {
          return as_tensor_list(call(*fused, in, fs.params));
        },
        [&](const std::vector<at::Tensor>& in) {
          return as_tensor_list(call(plain, in, kNoParams));
        },
        inputs, differentiable);
  };
}

// Runs an op of a family through the dispatch: call(variant, inputs, params) with the
// fused variant where use_fused() allows (first-call check included), else with plain.
template <class V, class Call>
auto dispatch_op(FamilyState& fs, const V* fused, const V& plain, const Problem& problem,
                 const char* family, const char* op, const std::vector<at::Tensor>& inputs,
                 const std::vector<bool>& differentiable, const Call& call) {
  const auto compare = first_call_compare(fs, fused, plain, inputs, differentiable, call);
  if (use_fused(fs, fused, problem, family, op, compare)) return call(*fused, inputs, fs.params);
  return call(plain, inputs, kNoParams);
}

// A family as its op files dispatch it: its state and name, its built fused variant
// (nullptr without CUDA) and its plain variant, kept in a function-local static.
template <class V>
class FamilyDispatch {
 public:
  FamilyDispatch(const char* family, const V* built_fused, const V& plain)
      : state_(family_state(family)), family_(family), built_fused_(built_fused), plain_(plain) {}

  FamilyState& state() const { return state_; }
  // The fused variant in use: the test override when one is set, else the built one.
  const V* fused() const { return fused_variant(state_, built_fused_); }
  const V& plain() const { return plain_; }

  // Runs one op of the family through dispatch_op: call(variant, inputs, params).
  template <class Call>
  auto run(const Problem& problem, const char* op, const std::vector<at::Tensor>& inputs,
           const std::vector<bool>& differentiable, const Call& call) const {
    return dispatch_op(state_, fused(), plain_, problem, family_, op, inputs, differentiable, call);
  }

 private:
  FamilyState& state_;
  const char* family_;
  const V* built_fused_;
  const V& plain_;
};

// The call of a family's main op whose argument struct is the op's two inputs, in order.
inline constexpr auto run_on_inputs = [](const auto& variant, const std::vector<at::Tensor>& in,
                                         const ParamValues& params) {
  return variant.run({in[0], in[1]}, params);
};

}  // namespace sg::kernels
