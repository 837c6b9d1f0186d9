// Search strategies: one file each under agent/search/, same interface,
// self-registered by name (SG_REGISTER_STRATEGY). A campaign runs a plan, a list
// of strategy names, over one shared SearchContext.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/protocol/manifest.hpp"
#include "agent/search/evaluator.hpp"

namespace sg::agent {

struct SearchOptions {
  int screen_steps = 4;  // short runs for screening (successive halving's first rung)
  int full_steps = 8;    // confirmation budget; greedy and local search run here
  int halving_eta = 2;   // keep 1/eta of the candidates per rung
  int local_max_evals = 12;
  int prune_rounds = 0;  // rounds of drops prune may take; 0 = until no drop is taken
  // The evaluator's memory probes run at the target micro-batch (Measure::target_probe
  // works): prune compares its drops there.
  bool rank_at_target = false;
  // The campaign's memory budgets (bytes per GPU at the target): memory points refine an int
  // memory switch toward each budget's cliff (agent/search/memory_points.hpp). Empty: none.
  std::vector<double> budget_bytes;
  unsigned rng_seed = 1234;
};

class SearchContext {
 public:
  SearchContext(const Manifest& m, Evaluator& e, SearchOptions o)
      : manifest(m), evaluator(e), options(o) {}

  const Manifest& manifest;
  Evaluator& evaluator;
  SearchOptions options;

  // Memoised: a (config, steps) pair is evaluated once per context; asking for more than a
  // known evaluation measured (Measure::full for one made with speed_pairs or target_probe)
  // evaluates it again (only what is missing runs) and the new evaluation takes its place.
  const Evaluation& evaluate(const Config& c, int steps, const std::string& strategy,
                             Measure measure = Measure::full);
  const Evaluation* find(const Config& c, int steps) const;
  // A combination evaluated at full_steps; one that fails the gate goes to the minifier at
  // once (its culprit lands in `conflicts`). A copy: the minifier's evaluations may move
  // the history.
  Evaluation evaluate_combination(const Config& c, const std::string& strategy);
  // Announces configurations evaluated next at `steps` (those not evaluated yet go to
  // Evaluator::prefetch, which may run their independent trials side by side).
  void prefetch(const std::vector<Config>& configs, int steps, Measure measure = Measure::full);
  const std::vector<Evaluation>& history() const { return history_; }

  // Minimal failing sets found by the minifier (config keys); combinations that
  // contain one are not tried again.
  std::vector<Config> conflicts;
  std::vector<Config> pending_minify;
  bool contains_conflict(const Config& c) const;

  // Per switch: the configuration screened for it (the switch plus its requires).
  std::map<std::string, Config> screened;
  // Per switch: the best accepted configuration confirmed at full_steps.
  std::map<std::string, Evaluation> best_single;
  void offer_single(const std::string& switch_name, const Evaluation& e);
  // The best combination greedy found (empty = baseline).
  Config best_combination;
  // Per kernel family (config name, "KERNEL_ROPE"): the variant the `kernels` strategy
  // chose and verified. make_candidate adds it to every candidate that turns the
  // family's switch on without naming a variant.
  std::map<std::string, std::string> kernel_choice;

  // Runs a registered strategy by name on this context.
  void run_strategy(const std::string& name);
  // The campaign's plan (strategy names in order), set by whoever runs it: a strategy can
  // leave work to one that comes after it.
  std::vector<std::string> plan;
  // True when `later` comes after `strategy` in the plan.
  bool runs_after(const std::string& strategy, const std::string& later) const;

  // Closes requires, adds the chosen kernel variants (kernel_choice) and validates;
  // nullopt (and a debug log) when impossible.
  std::optional<Config> make_candidate(Config c) const;

 private:
  std::vector<Evaluation> history_;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual void run(SearchContext& ctx) = 0;
};

using StrategyFactory = std::function<std::unique_ptr<Strategy>()>;

class StrategyRegistry {
 public:
  static StrategyRegistry& instance();
  bool add(const std::string& name, const std::string& summary, StrategyFactory f);
  std::unique_ptr<Strategy> create(const std::string& name) const;  // nullptr if unknown
  std::vector<std::string> names() const;
  std::string summary(const std::string& name) const;

 private:
  std::map<std::string, std::pair<std::string, StrategyFactory>> entries_;
};

// The default plan of a campaign.
std::vector<std::string> default_plan();

#define SG_REGISTER_STRATEGY(Type, name, summary)                                        \
  namespace {                                                                            \
  const bool registered_##Type = ::sg::agent::StrategyRegistry::instance().add(          \
      name, summary, [] { return std::unique_ptr<::sg::agent::Strategy>(new Type()); }); \
  }

}  // namespace sg::agent
