// Kernel selection and the dispatch of the families' ops (each declared in
// kernels/<family>/<family>.hpp): an op runs the plain variant unless its family is
// selected, the fused variant can implement the problem, and the family has not fallen
// back. The first fused call of each op in a process is compared, forward and backward,
// against the plain variant on its actual inputs; any difference makes the family fall
// back to plain for the rest of the process (logged to stderr once).
#pragma once

#include "kernels/common/registry.hpp"

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

namespace sg::kernels {

// Which families run fused, keyed by family name, and their SG_KERNEL_<FAMILY> parameter
// strings. A family absent from `fused` runs plain.
struct KernelSelection {
  std::map<std::string, bool> fused;          // family name ("ROPE") -> run its fused variant
  std::map<std::string, std::string> params;  // family name -> "threads=128,vec=2"
};

// Process-wide, like ATen's global context flags: set once before the first step.
// Throws std::invalid_argument naming the family for an unknown family, a bad parameter
// string or a family selected in a build without its fused variant.
void select_kernels(const KernelSelection& selection);

// Bit-for-bit equality (dtype, shape and every element's bits: -0.0 differs from +0.0,
// NaN payloads count), unlike at::equal which compares values.
bool bitwise_equal(const at::Tensor& a, const at::Tensor& b);

// Families that fell back to plain after a first-call mismatch, in this process, in
// registry order.
std::vector<std::string> fallen_back_families();

namespace testing {
// Forget first-call results and fallbacks (and the injection below).
void reset_first_call_checks();
// Make the next first-call comparison of `family` see a difference.
void inject_first_call_mismatch(const std::string& family);
// Replace `family`'s fused variant (nullptr: the built one) by one of the family's variant
// type, so the dispatch and its first-call check can be tested on any device.
void override_fused(const std::string& family, const Variant* fused);
}  // namespace testing

}  // namespace sg::kernels
