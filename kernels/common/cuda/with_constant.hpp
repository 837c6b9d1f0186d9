// Turns a runtime launch parameter into the compile-time constant a kernel template takes.
#pragma once

#include <cstdint>
#include <type_traits>

namespace sg::kernels::cuda {

// Calls f(std::integral_constant<int, V>{}) for the first V of Vs equal to `value` and
// returns true; returns false, without calling f, when none is.
template <int... Vs, typename F>
bool with_constant(int64_t value, F&& f) {
  return ((value == Vs && (f(std::integral_constant<int, Vs>{}), true)) || ...);
}

// Calls f(vec constant) for the packs a thread handles, vec in {1, 2, 4} (4 for any other
// value).
template <typename F>
void with_vec(int64_t vec, F&& f) {
  if (!with_constant<1, 2>(vec, f)) f(std::integral_constant<int, 4>{});
}

}  // namespace sg::kernels::cuda
