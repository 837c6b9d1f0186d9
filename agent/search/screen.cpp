// Strategy "screen": every available switch alone (plus what it requires) at the
// short step budget, with one representative non-default value. Int and enum
// switches get their other values from "local".
#include "agent/search/strategy.hpp"

namespace sg::agent {
namespace {

class Screen : public Strategy {
 public:
  void run(SearchContext& ctx) override {
    std::vector<std::pair<std::string, Config>> plan;
    for (const auto& s : ctx.manifest.switches) {
      if (!s.available) continue;
      std::string value;
      for (const auto& v : s.values) {
        if (v != s.default_value) {
          value = v;
          break;
        }
      }
      if (value.empty()) continue;
      auto c = ctx.make_candidate({{s.name, value}});
      if (c) plan.emplace_back(s.name, *c);
    }
    std::vector<Config> configs;
    for (const auto& [name, c] : plan) configs.push_back(c);
    ctx.prefetch(configs, ctx.options.screen_steps);  // the gate runs are independent
    for (const auto& [name, c] : plan) {
      ctx.screened[name] = c;
      const Evaluation& e = ctx.evaluate(c, ctx.options.screen_steps, "screen");
      ctx.offer_single(name, e);
    }
  }
};

}  // namespace
SG_REGISTER_STRATEGY(Screen, "screen", "each switch alone at the short step budget")
}  // namespace sg::agent
