// op_cases(): the registered family's own cases (kernels/families.cpp).
#include "kernels/common/timing/op_cases.hpp"

#include "kernels/common/registry.hpp"

#include <stdexcept>

namespace sg::kernels {

std::vector<OpCase> op_cases(const std::string& family, const KernelShape& shape, int input_sets) {
  const auto& fams = families();  // in registrations() order
  for (size_t i = 0; i < fams.size(); ++i) {
    if (fams[i].name == family) return registrations()[i].op_cases(shape, input_sets);
  }
  throw std::invalid_argument("unknown kernel family '" + family + "'");
}

}  // namespace sg::kernels
