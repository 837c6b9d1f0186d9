// Strategy "greedy": combine the confirmed singles in order of measured gain,
// re-gating every addition; keep an addition only when the combination passes
// and gains at least kGreedyMinGain over the current best. A combination that
// fails the gate while its parts passed goes to the minifier. Memory trade-offs
// are then added one at a time to the best combination (frontier points).
#include <algorithm>

#include "agent/gate/gate.hpp"
#include "agent/search/strategy.hpp"

namespace sg::agent {
namespace {

constexpr double kGreedyMinGain = kNoiseThreshold;

std::optional<Config> merge(const Config& a, const Config& b) {
  Config out = a;
  for (const auto& [k, v] : b) {
    auto it = out.find(k);
    if (it != out.end() && it->second != v) return std::nullopt;
    out[k] = v;
  }
  return out;
}

class Greedy : public Strategy {
 public:
  void run(SearchContext& ctx) override {
    std::vector<Evaluation> speed, memory;
    for (const auto& [name, e] : ctx.best_single) {
      (e.speedup > 1.0 + kNoiseThreshold ? speed : memory).push_back(e);
    }
    std::sort(speed.begin(), speed.end(), [](const Evaluation& a, const Evaluation& b) {
      return a.speedup != b.speedup ? a.speedup > b.speedup
                                    : config_key(a.config) < config_key(b.config);
    });
    Config current;
    double current_speed = 1.0;
    for (const auto& item : speed) {
      auto merged = merge(current, item.config);
      if (!merged) continue;
      auto combo = ctx.make_candidate(*merged);
      if (!combo || *combo == current || ctx.contains_conflict(*combo)) continue;
      const Evaluation& e = ctx.evaluate(*combo, ctx.options.full_steps, "greedy");
      if (e.accepted() && e.speedup > current_speed * (1.0 + kGreedyMinGain)) {
        current = *combo;
        current_speed = e.speedup;
      } else if (e.disposition == Disposition::gate_failed) {
        ctx.pending_minify.push_back(*combo);
        ctx.run_strategy("minify");
      }
    }
    ctx.best_combination = current;
    for (const auto& item : memory) {
      auto merged = merge(current, item.config);
      if (!merged) continue;
      auto combo = ctx.make_candidate(*merged);
      if (!combo || *combo == current || ctx.contains_conflict(*combo)) continue;
      const Evaluation& e = ctx.evaluate(*combo, ctx.options.full_steps, "greedy");
      if (e.disposition == Disposition::gate_failed) {
        ctx.pending_minify.push_back(*combo);
        ctx.run_strategy("minify");
      }
    }
  }
};

}  // namespace
SG_REGISTER_STRATEGY(Greedy, "greedy",
                     "combine confirmed singles in order of gain, re-gating each addition")
}  // namespace sg::agent
