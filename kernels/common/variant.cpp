// Status names and the problem helpers every family's problem builder starts from.
#include "kernels/common/variant.hpp"

#include <algorithm>

namespace sg::kernels {

const char* to_string(Status status) {
  switch (status) {
    case Status::kSuccess:
      return "success";
    case Status::kErrorNotSupported:
      return "not_supported";
    case Status::kErrorInvalidProblem:
      return "invalid_problem";
    case Status::kErrorUnavailable:
      return "unavailable";
    case Status::kErrorConstraint:
      return "constraint_violated";
  }
  return "unknown";
}

int64_t alignment_of(const at::Tensor& t) {
  const auto a = reinterpret_cast<uintptr_t>(t.data_ptr());
  int64_t align = 256;
  while (align > 1 && a % static_cast<uintptr_t>(align) != 0) align /= 2;
  return align;
}

Problem base_problem(const at::Tensor& main) {
  Problem p;
  p.shape = main.sizes().vec();
  p.dtype = main.scalar_type();
  p.device = main.device().type();
  p.contiguous = main.is_contiguous();
  p.alignment_bytes = alignment_of(main);
  return p;
}

void add_operand(Problem& p, const at::Tensor& operand) {
  p.contiguous = p.contiguous && operand.is_contiguous();
  p.alignment_bytes = std::min(p.alignment_bytes, alignment_of(operand));
}

}  // namespace sg::kernels
