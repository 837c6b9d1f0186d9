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

// Thrown when a campaign's trial or time budget is spent (agent/trial/trial_service.hpp);
// evaluators pass it on to the campaign driver, which stops the plan.
class BudgetExhausted : public std::runtime_error {
 public:
  BudgetExhausted() : std::runtime_error("budget exhausted") {}
};

}  // namespace sg::agent
