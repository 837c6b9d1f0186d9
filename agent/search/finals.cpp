// Strategy "finals" and the choice of finalists (agent/search/finals.hpp). The pairing
// itself is the evaluator's (CampaignEvaluator::run_finals, campaign_finals.cpp): it owns
// the trials. Put it last in the plan (`--plan kernels,stack,prune,finals`): it pairs what
// the strategies before it accepted; what a later strategy accepts ranks below the
// finalists (tier 0) in the budgets that have finals.
#include "agent/search/finals.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "agent/protocol/config.hpp"
#include "agent/search/strategy.hpp"

namespace sg::agent {

std::vector<BudgetFinalists> choose_finalists(const std::vector<EvaluationRow>& evals,
                                              const std::map<std::int64_t, TargetRank>& ranks,
                                              const std::vector<NamedBudget>& budgets,
                                              int full_steps, int per_budget,
                                              bool probed_at_target) {
  std::vector<BudgetFinalists> out;
  for (const auto& b : budgets) {
    std::vector<const EvaluationRow*> fits;
    for (const auto& e : evals) {
      if (e.steps != full_steps || e.disposition != Disposition::accepted || e.config_key.empty())
        continue;
      if (!(e.projected_peak_bytes <= static_cast<double>(b.bytes))) continue;
      if (std::isnan(e.speedup)) continue;  // a drop of prune's compared unpaired: no finalist
      fits.push_back(&e);
    }
    auto rank_of = [&](const EvaluationRow* e) {
      return ranks.count(e->id) ? ranks.at(e->id).speedup : e->speedup;
    };
    std::stable_sort(fits.begin(), fits.end(), [&](const EvaluationRow* x, const EvaluationRow* y) {
      if (rank_of(x) != rank_of(y)) return rank_of(x) > rank_of(y);
      return config_from_key(x->config_key).size() < config_from_key(y->config_key).size();
    });
    BudgetFinalists f{b, {}, ""};
    for (const EvaluationRow* e : fits) {
      if (static_cast<int>(f.finalists.size()) >= per_budget) break;
      const bool runs_at_target =
          !probed_at_target || (ranks.count(e->id) && ranks.at(e->id).measured_at_target());
      if (runs_at_target) {
        f.finalists.push_back(e);
      } else if (f.finalists.empty()) {
        f.skipped = fmt::format(
            "its leading configuration ({}) did not run at the target micro-batch on this device",
            e->config_key);
        break;
      }
    }
    if (f.skipped.empty() && f.finalists.empty()) f.skipped = "no accepted configuration fits it";
    out.push_back(std::move(f));
  }
  return out;
}

namespace {

// Finalists per budget: the leader and its closest rival. A third would cost another
// `rounds` runs at the target for a configuration already behind two others.
constexpr int kFinalistsPerBudget = 2;

class Finals : public Strategy {
 public:
  // Only what the plan evaluated before finals: a resumed campaign rebuilds the same history
  // (its strategies re-run from the store), so the pool, and the trials, stay the same.
  void run(SearchContext& ctx) override {
    ctx.evaluator.run_finals(ctx.history(), kFinalistsPerBudget);
  }
};

}  // namespace

SG_REGISTER_STRATEGY(Finals, "finals",
                     "pairs each budget's leading accepted configurations against the baseline at "
                     "the target micro-batch")

}  // namespace sg::agent
