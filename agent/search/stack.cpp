// Strategy "stack": top-down search for campaigns whose trials are too expensive to
// screen every switch first (wam `base` on one GPU: ~25 s per trial, mostly model build).
//  1. every available speed and schedule switch of the bitwise class together, each at its
//     representative value; a combination that fails the gate goes to the minifier and
//     the culprit is left out;
//  2. that plus every tolerance-class speed/schedule switch; kept when it passes and
//     gains at least kStackMinGain over step 1;
//  3. the best of those with each non-default value of every memory switch, one at a time
//     (frontier points, agent/search/memory_points.hpp), so each memory budget finds its
//     fastest configuration that fits (e.g. CKPT_LAYERS=0 for a large budget, 8 or 16 for a
//     small one). With "prune" later in the plan, step 3 is left to it: it runs the memory
//     values on what it keeps, and the campaign pays for one set of memory points.
// Members that are slower than the stack without them are left to "prune"; per-switch
// attribution to "screen" / "greedy" with the budget that remains.
#include <algorithm>

#include "agent/gate/gate.hpp"
#include "agent/search/memory_points.hpp"
#include "agent/search/strategy.hpp"

namespace sg::agent {
namespace {

constexpr double kStackMinGain = kNoiseThreshold;

// The value a switch takes in an all-on combination: bool 1, enum the last listed value,
// int the largest candidate (schedule switches: most workers); "" when it has none.
std::string representative_value(const SwitchSpec& s) {
  std::vector<std::string> others;
  for (const auto& v : s.values) {
    if (v != s.default_value) others.push_back(v);
  }
  if (others.empty()) return "";
  if (s.type == "int") {
    return *std::max_element(
        others.begin(), others.end(),
        [](const std::string& a, const std::string& b) { return std::stoll(a) < std::stoll(b); });
  }
  return others.back();
}

class Stack : public Strategy {
 public:
  void run(SearchContext& ctx) override {
    Config bitwise_all, tolerance_extra;
    for (const auto& s : ctx.manifest.switches) {
      if (!s.available || s.effect == "memory") continue;
      const std::string v = representative_value(s);
      if (v.empty()) continue;
      (s.bitwise() ? bitwise_all : tolerance_extra)[s.name] = v;
    }
    Config current;
    double current_speed = 1.0;
    auto consider = [&](const Config& wanted, double min_gain) {
      auto c = ctx.make_candidate(wanted);
      if (!c || c->empty() || *c == current || ctx.contains_conflict(*c)) return;
      const Evaluation e = ctx.evaluate_combination(*c, "stack");
      if (e.accepted() && e.speedup > current_speed * (1.0 + min_gain)) {
        current = *c;
        current_speed = e.speedup;
      } else if (e.disposition == Disposition::gate_failed) {
        Config without = *c;  // retry without the culprit's switches
        for (const auto& bad : ctx.conflicts) {
          for (const auto& [k, v] : bad) without.erase(k);
        }
        if (without != *c && !without.empty()) {
          auto retry = ctx.make_candidate(without);
          if (retry && !ctx.contains_conflict(*retry)) {
            const Evaluation& r = ctx.evaluate(*retry, ctx.options.full_steps, "stack");
            if (r.accepted() && r.speedup > current_speed * (1.0 + min_gain)) {
              current = *retry;
              current_speed = r.speedup;
            }
          }
        }
      }
    };
    consider(bitwise_all, 0.0);
    Config with_tolerance = current.empty() ? bitwise_all : current;
    for (const auto& [k, v] : tolerance_extra) with_tolerance[k] = v;
    if (!tolerance_extra.empty()) consider(with_tolerance, kStackMinGain);
    ctx.best_combination = current;
    // With prune later in the plan, the memory values go on what prune keeps (it evaluates
    // them on its result, the stack itself when nothing is dropped): evaluating them here
    // too cost a third of the H200 campaign's time (9 evaluations, ~30 s each).
    if (ctx.runs_after("stack", "prune")) return;
    evaluate_memory_points(ctx, current, "stack");
  }
};

}  // namespace
SG_REGISTER_STRATEGY(
    Stack, "stack", "all speed switches together, then with tolerance ones, then each memory value")
}  // namespace sg::agent
