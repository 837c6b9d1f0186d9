// Strategy "local": OpenTuner-style bandit over search techniques for int and
// enum switches. Techniques move along the manifest's candidate values (up, down,
// random); UCB1 picks the technique, rewarded when a move beats the best speedup
// so far. Evaluations run at full_steps. Then, for each available kernel-variant
// family, its valid parameter strings (constraints applied) on top of the best
// configuration of the family's switch, up to local_max_evals each.
#include <cmath>
#include <random>

#include "agent/protocol/kernel_params.hpp"
#include "agent/search/strategy.hpp"

namespace sg::agent {
namespace {

struct Arm {
  const char* name;
  double reward = 0;
  int pulls = 0;
};

class Local : public Strategy {
 public:
  void run(SearchContext& ctx) override {
    std::mt19937 rng(ctx.options.rng_seed);
    for (const auto& s : ctx.manifest.switches) {
      if (!s.available || s.type == "bool" || s.values.size() < 2) continue;
      tune_switch(ctx, s, rng);
    }
    for (const auto& f : ctx.manifest.kernel_families) {
      if (f.available) tune_kernel(ctx, f);
    }
  }

 private:
  static void tune_kernel(SearchContext& ctx, const KernelFamily& f) {
    Config base;
    if (auto it = ctx.best_single.find(f.switch_name); it != ctx.best_single.end())
      base = it->second.config;
    const std::string name = kernel_config_name(f);
    std::vector<Config> plan;
    for (const auto& value : kernel_candidates(f)) {
      if (static_cast<int>(plan.size()) >= ctx.options.local_max_evals) break;
      Config c = base;
      c[name] = value;
      if (auto cand = ctx.make_candidate(c)) plan.push_back(*cand);
    }
    ctx.prefetch(plan, ctx.options.full_steps);
    for (const auto& cand : plan)
      ctx.offer_single(name, ctx.evaluate(cand, ctx.options.full_steps, "local"));
  }

  static void tune_switch(SearchContext& ctx, const SwitchSpec& s, std::mt19937& rng) {
    const auto& vals = s.values;
    auto index_of = [&](const std::string& v) {
      for (std::size_t i = 0; i < vals.size(); ++i) {
        if (vals[i] == v) return static_cast<int>(i);
      }
      return 0;
    };
    int best = index_of(s.default_value);
    double best_speed = 1.0;
    if (auto it = ctx.best_single.find(s.name); it != ctx.best_single.end()) {
      best = index_of(it->second.config.at(s.name));
      best_speed = it->second.speedup;
    }
    std::vector<Arm> arms = {{"up"}, {"down"}, {"random"}};
    std::vector<bool> tried(vals.size(), false);
    tried[static_cast<std::size_t>(index_of(s.default_value))] = true;
    tried[static_cast<std::size_t>(best)] = true;
    const int n = static_cast<int>(vals.size());
    for (int evals = 0, round = 0; evals < ctx.options.local_max_evals && round < 4 * n; ++round) {
      int untried = 0;
      for (bool t : tried) untried += t ? 0 : 1;
      if (untried == 0) break;
      // UCB1 over techniques; unpulled arms first.
      int total = 0;
      for (const auto& a : arms) total += a.pulls;
      std::size_t pick = 0;
      double best_score = -1;
      for (std::size_t i = 0; i < arms.size(); ++i) {
        double score = arms[i].pulls == 0
                           ? 1e9 - static_cast<double>(i)
                           : arms[i].reward / arms[i].pulls +
                                 std::sqrt(2.0 * std::log(total + 1.0) / arms[i].pulls);
        if (score > best_score) {
          best_score = score;
          pick = i;
        }
      }
      int idx = best;
      if (pick == 0) idx = best + 1;
      if (pick == 1) idx = best - 1;
      if (pick == 2) idx = static_cast<int>(rng() % static_cast<unsigned>(n));
      arms[pick].pulls += 1;
      if (idx < 0 || idx >= n || tried[static_cast<std::size_t>(idx)]) continue;
      tried[static_cast<std::size_t>(idx)] = true;
      auto c = ctx.make_candidate({{s.name, vals[static_cast<std::size_t>(idx)]}});
      if (!c) continue;
      const Evaluation& e = ctx.evaluate(*c, ctx.options.full_steps, "local");
      ++evals;
      ctx.offer_single(s.name, e);
      if (e.accepted() && e.speedup > best_speed) {
        arms[pick].reward += 1;
        best = idx;
        best_speed = e.speedup;
      }
    }
  }
};

}  // namespace
SG_REGISTER_STRATEGY(Local, "local",
                     "UCB1 bandit over up/down/random moves for int and enum switches")
}  // namespace sg::agent
