// Finals: which configurations the `finals` strategy pairs at the target micro-batch.
//
// Per memory budget, the `per_budget` leading accepted configurations confirmed at the
// full step budget whose projected peak fits it (the baseline is the pairs' reference, not
// a finalist), ordered as presets would order them before finals (agent/presets/
// target_rank.hpp: probe at the target, else campaign speedup; fewer switches on ties).
// With --probe-at-target a configuration whose probe fell back to a smaller batch does not
// run at the target on this device: it is passed over, and when it is the budget's leader
// the budget has no finals at all (pairing only those behind it would rank them above a
// leader that cannot be measured there).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "agent/common/units.hpp"
#include "agent/ranking/target_rank.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

struct BudgetFinalists {
  NamedBudget budget;
  std::vector<const EvaluationRow*> finalists;  // best first
  std::string skipped;                          // why the budget has no finals (empty when it has)
};

std::vector<BudgetFinalists> choose_finalists(const std::vector<EvaluationRow>& evals,
                                              const std::map<std::int64_t, TargetRank>& ranks,
                                              const std::vector<NamedBudget>& budgets,
                                              int full_steps, int per_budget,
                                              bool probed_at_target);

}  // namespace sg::agent
