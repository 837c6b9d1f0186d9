// The typed exceptions of the controller and the trainer (agent/common/errors.hpp,
// trainer/errors.hpp): one class template, told apart by a tag type, so that a command
// edge catches each kind by name and maps it to its exit code. Header-only.
#pragma once
#include <stdexcept>

namespace sg {

// An error whose what() is the one message the command edge prints.
template <class Tag>
class TypedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace sg
