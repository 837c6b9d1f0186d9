// What the host launchers of every family's CUDA kernels share (each family declares its
// own in kernels/<family>/<family>_launchers.hpp, defined in its *.cu, built only when
// SPEEDGATE_WITH_CUDA). Launchers allocate outputs, launch on the current stream and check
// the launch. Autograd wrapping and all problem checks live in the family's
// <family>_fused_variant.cpp: the launchers REQUIRE operands the family's can_implement
// accepted (TORCH_CHECKs guard it).
#pragma once

#include <ATen/ATen.h>

#include <atomic>
#include <limits>

namespace sg::kernels::cuda {

// Test hook: when set, every output a launcher allocates is filled with NaN (all bits
// set) before the kernel runs, so an element a kernel fails to write cannot pass.
inline std::atomic<bool>& poison_outputs_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}
inline at::Tensor empty_output(at::IntArrayRef sizes, const at::TensorOptions& options) {
  auto t = at::empty(sizes, options);
  if (poison_outputs_flag().load()) t.fill_(std::numeric_limits<double>::quiet_NaN());
  return t;
}

}  // namespace sg::kernels::cuda
