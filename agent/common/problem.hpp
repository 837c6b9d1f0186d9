// The controller's value types for an expected "no" (docs/conventions.md): a check
// returns a Problem, a parse of untrusted text a Parsed<T>. Bad input and broken
// invariants are typed exceptions instead (agent/common/errors.hpp).
#pragma once
#include <optional>
#include <string>

namespace sg::agent {

// What a check found wrong: nullopt when all is well, else one message naming the
// problem. The caller decides what it means (a usage error, a failed gate, an invalid
// result).
using Problem = std::optional<std::string>;

// A parse of text a trainer wrote: the value, or (result empty) why there is none.
template <class T>
struct Parsed {
  std::optional<T> result;
  std::string error;  // why it is invalid
};

}  // namespace sg::agent
