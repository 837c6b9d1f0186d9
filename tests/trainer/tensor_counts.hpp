// Element counts of module tensors, for the model tests' analytic parameter counts.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace sg::trainer::testing {

// Elements of every tensor, e.g. of module->parameters() or module->buffers().
inline int64_t numel_of(const std::vector<at::Tensor>& tensors) {
  int64_t n = 0;
  for (const auto& t : tensors) n += t.numel();
  return n;
}

}  // namespace sg::trainer::testing
