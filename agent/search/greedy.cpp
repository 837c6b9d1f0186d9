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

// `current` plus `addition`, when that is a new candidate not known to conflict.
std::optional<Config> extension(const SearchContext& ctx, const Config& current,
                                const Config& addition) {
  auto merged = merge(current, addition);
  if (!merged) return std::nullopt;
  auto combo = ctx.make_candidate(*merged);
  if (!combo || *combo == current || ctx.contains_conflict(*combo)) return std::nullopt;
  return combo;
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
      const auto combo = extension(ctx, current, item.config);
      if (!combo) continue;
      const Evaluation e = ctx.evaluate_combination(*combo, "greedy");
      if (e.accepted() && e.speedup > current_speed * (1.0 + kGreedyMinGain)) {
        current = *combo;
        current_speed = e.speedup;
      }
    }
    ctx.best_combination = current;
    for (const auto& item : memory) {
      if (const auto combo = extension(ctx, current, item.config))
        ctx.evaluate_combination(*combo, "greedy");
    }
  }
};

}  // namespace
SG_REGISTER_STRATEGY(Greedy, "greedy",
                     "combine confirmed singles in order of gain, re-gating each addition")
}  // namespace sg::agent
