// Typed exceptions caught at the CLI boundary and mapped to exit codes:
// UsageError -> 2 (bad flag, bad file, bad manifest), GateFailure -> 1.
#pragma once
#include <stdexcept>
#include <string>

namespace sg::agent {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class GateFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The DB was written by a newer speedgate, or is otherwise unusable.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace sg::agent
