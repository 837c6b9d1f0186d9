// What every fused CUDA variant (kernels/<family>/<family>_fused_variant.cpp) checks and
// needs in common. Defined only when SPEEDGATE_WITH_CUDA.
#pragma once

#if SPEEDGATE_WITH_CUDA

#include "kernels/common/registry.hpp"

#include <torch/csrc/autograd/custom_function.h>

#include <cstdint>
#include <initializer_list>
#include <string>

namespace sg::kernels {

// The fused variants are LibTorch autograd functions.
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A family's fused CUDA variant: named "fused_cuda"; its can_implement is fused_checks().
template <class FamilyVariant>
class FusedVariant : public FamilyVariant {
 public:
  std::string name() const final { return "fused_cuda"; }
};

// What a fused variant can implement, checked in this order: parameters that satisfy the
// family, a CUDA main operand of a supported dtype, dense operands, the other operands
// fitting, at least one element, pointers aligned to min_alignment bytes, and then the
// variant's own test of the shape (`well_formed`: kErrorInvalidProblem when false).
inline Status fused_checks(const FamilyInfo& fam, const Problem& problem, const ParamValues& params,
                           std::initializer_list<at::ScalarType> dtypes, int64_t min_alignment,
                           bool well_formed) {
  if (check_params(fam, with_defaults(fam, params)) != Status::kSuccess)
    return Status::kErrorConstraint;
  if (problem.shape.empty()) return Status::kErrorInvalidProblem;
  if (problem.device != c10::DeviceType::CUDA) return Status::kErrorNotSupported;
  bool dtype_ok = false;
  for (auto t : dtypes) dtype_ok = dtype_ok || t == problem.dtype;
  if (!dtype_ok || !problem.contiguous || !problem.operands_match)
    return Status::kErrorNotSupported;
  int64_t numel = 1;
  for (auto d : problem.shape) numel *= d;
  if (numel <= 0) return Status::kErrorNotSupported;
  if (problem.alignment_bytes < min_alignment) return Status::kErrorNotSupported;
  return well_formed ? Status::kSuccess : Status::kErrorInvalidProblem;
}

// g itself when dense and 16-byte aligned, else a dense aligned copy (same values): the
// fused kernels' layout requirement for incoming gradients.
inline at::Tensor dense_aligned(const at::Tensor& g) {
  if (g.is_contiguous() && reinterpret_cast<uintptr_t>(g.data_ptr()) % 16 == 0) return g;
  return g.clone(at::MemoryFormat::Contiguous);
}

}  // namespace sg::kernels

#endif  // SPEEDGATE_WITH_CUDA
