// Strategy "halving": successive halving on step budgets. Screened candidates
// that were accepted are re-run at doubling step budgets up to full_steps; each
// rung keeps the fastest 1/eta (memory trade-offs are always kept, they compete
// on the other axis of the frontier). The last rung confirms.
#include <algorithm>
#include <cmath>

#include "agent/search/strategy.hpp"

namespace sg::agent {
namespace {

class Halving : public Strategy {
 public:
  void run(SearchContext& ctx) override {
    const int eta = std::max(2, ctx.options.halving_eta);
    std::vector<std::string> alive;
    for (const auto& [name, cfg] : ctx.screened) {
      const Evaluation* e = ctx.find(cfg, ctx.options.screen_steps);
      if (e && e->accepted()) alive.push_back(name);
    }
    int steps = ctx.options.screen_steps;
    while (steps < ctx.options.full_steps && !alive.empty()) {
      steps = std::min(ctx.options.full_steps, steps * eta);
      std::vector<std::pair<double, std::string>> speed;
      std::vector<std::string> keep;
      std::vector<Config> rung;
      for (const auto& name : alive) rung.push_back(ctx.screened[name]);
      ctx.prefetch(rung, steps);
      for (const auto& name : alive) {
        const Evaluation& e = ctx.evaluate(ctx.screened[name], steps, "halving");
        if (!e.accepted()) continue;
        if (e.speedup > 1.0)
          speed.emplace_back(e.speedup, name);
        else
          keep.push_back(name);  // accepted but not faster: a memory trade-off
      }
      std::sort(speed.begin(), speed.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
      });
      std::size_t n =
          steps == ctx.options.full_steps
              ? speed.size()
              : static_cast<std::size_t>(std::ceil(static_cast<double>(speed.size()) / eta));
      for (std::size_t i = 0; i < n && i < speed.size(); ++i) keep.push_back(speed[i].second);
      alive = keep;
    }
    for (const auto& name : alive) {
      if (const Evaluation* e = ctx.find(ctx.screened[name], ctx.options.full_steps))
        ctx.offer_single(name, *e);
    }
  }
};

}  // namespace
SG_REGISTER_STRATEGY(Halving, "halving",
                     "successive halving of accepted screens over doubling step budgets")
}  // namespace sg::agent
