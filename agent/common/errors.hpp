// Typed exceptions caught at the CLI boundary and mapped to exit codes:
// UsageError -> 2 (bad flag, bad file, bad manifest), GateFailure -> 1.
#pragma once
#include <stdexcept>
#include <string>

#include "common/errors/typed_error.hpp"

namespace sg::agent {

using UsageError = TypedError<struct UsageErrorTag>;
using GateFailure = TypedError<struct GateFailureTag>;

// The DB was written by a newer speedgate, or is otherwise unusable.
using StoreError = TypedError<struct StoreErrorTag>;

// Thrown when a campaign's trial or time budget is spent (agent/trial/trial_service.hpp);
// evaluators pass it on to the campaign driver, which stops the plan.
class BudgetExhausted : public std::runtime_error {
 public:
  BudgetExhausted() : std::runtime_error("budget exhausted") {}
};

}  // namespace sg::agent
