// Strategy "prune": top-down backward elimination on the best combination, after "stack"
// (or "greedy"). A stack holds every speed switch, including some that are slower alone
// (on the H200: FUSED_ADALN 0.92x, VAE_FIRST 0.92x, PIN_MEMORY 0.95x), and the bottom-up
// "greedy" needs a single-switch screen that a campaign of expensive trials cannot afford.
//  1. start from ctx.best_combination (nothing to do when empty) and its evaluation at
//     full_steps (memoised: the one stack or greedy measured);
//  2. one round: each speed/schedule member dropped in turn; its gate runs announced
//     together (prefetch), then each evaluated at full_steps. The fastest accepted drop is
//     taken when it is not slower than the fastest combination measured so far beyond the
//     noise threshold (kPruneMaxLoss). When two or more drops were that harmless, all of
//     them at once are evaluated next; if that holds too, pruning ends there (each member
//     left was measured slower to drop) — one evaluation instead of a round per drop,
//     which on the H200 (~35 s an evaluation, ~16 members) is what fits a campaign.
//     Otherwise the single best drop is taken and rounds repeat until none is taken;
//  3. the pruned combination with each memory switch value (frontier points,
//     agent/search/memory_points.hpp), as stack does for its own.
// Threshold: "not slower beyond noise", not "faster beyond noise". A member whose removal
// costs nothing measurable does not pay for itself: a preset with fewer switches at the
// same speed has fewer code paths that can break on another machine, less tolerance-class
// deviation, and is what presets prefer on ties. Requiring a measured gain would keep every
// neutral member. The loss is bounded against the fastest combination measured during the
// pruning, not against the current one, so successive drops cannot each give up a little
// and drift down: the result stays within kPruneMaxLoss of the best measured.
// Requires: dropping a switch drops the members that need it (their requires, closed
// transitively, and kernel-variant entries of its family) as one candidate; each dependant
// is also a drop of its own. Skipping such switches instead would never test removing a
// required switch, which may be the slow one. A drop that would take a memory switch along
// is skipped: memory switches stay (they are the frontier's business). Candidates that
// contain a known conflict are skipped; one that fails the gate is not taken (no minify:
// its superset passed).
// Cost: a round evaluates one candidate per member (plus the all-harmless one); usually one
// round, at most one round per member.
#include <algorithm>
#include <optional>
#include <set>

#include <spdlog/spdlog.h>

#include "agent/gate/gate.hpp"
#include "agent/search/memory_points.hpp"
#include "agent/search/strategy.hpp"

namespace sg::agent {
namespace {

constexpr double kPruneMaxLoss = kNoiseThreshold;

bool is_memory_switch(const std::string& name, const Manifest& m) {
  const SwitchSpec* s = m.find_switch(name);
  return s && s->effect == "memory";
}

struct Drop {
  std::string name;  // the member dropped (its dependants go with it)
  Config config;     // what remains
};

// One candidate per speed/schedule member of `current`: kernel-variant entries go with
// their switch; memory switches, and what they need, stay.
std::vector<Drop> drops_of(const SearchContext& ctx, const Config& current) {
  std::vector<Drop> out;
  for (const auto& [name, value] : current) {
    if (!ctx.manifest.find_switch(name)) continue;
    const auto gone = with_dependants(current, name, ctx.manifest);  // holds `name`
    if (std::any_of(gone.begin(), gone.end(),
                    [&](const std::string& g) { return is_memory_switch(g, ctx.manifest); })) {
      continue;
    }
    Config rest = current;
    for (const auto& g : gone) rest.erase(g);
    auto c = ctx.make_candidate(rest);
    if (!c || *c == current || ctx.contains_conflict(*c)) continue;
    out.push_back({name, *c});
  }
  return out;
}

// `current` without every member whose own drop (in `round`, already evaluated) was
// accepted at `floor` or faster; nullopt unless that is two or more drops.
std::optional<Config> drop_all_harmless(SearchContext& ctx, const Config& current, const std::vector<Drop>& round,
                                        double floor) {
  Config rest = current;
  int harmless = 0;
  for (const auto& d : round) {
    const Evaluation* e = ctx.find(d.config, ctx.options.full_steps);
    if (!e || !e->accepted() || e->speedup < floor) continue;
    ++harmless;
    for (const auto& [k, v] : current) {
      if (!d.config.count(k)) rest.erase(k);
    }
  }
  if (harmless < 2) return std::nullopt;
  auto c = ctx.make_candidate(rest);
  if (!c || *c == current || ctx.contains_conflict(*c)) return std::nullopt;
  return c;
}

class Prune : public Strategy {
 public:
  void run(SearchContext& ctx) override {
    Config current = ctx.best_combination;
    if (current.empty()) return;
    const int steps = ctx.options.full_steps;
    // A copy: the reference evaluate() returns does not outlive the next evaluation.
    const Evaluation start = ctx.evaluate(current, steps, "prune");
    if (!start.accepted()) {
      spdlog::warn("[prune] {} is {} at {} steps: nothing to prune against", config_key(current),
                   to_string(start.disposition), steps);
      return;
    }
    double current_speed = start.speedup, fastest = start.speedup;
    for (;;) {
      const std::vector<Drop> round = drops_of(ctx, current);
      std::vector<Config> configs;
      for (const auto& d : round) configs.push_back(d.config);
      ctx.prefetch(configs, steps);  // the gate runs are independent
      std::optional<Drop> best;
      double best_speed = 0;
      for (const auto& d : round) {
        const Evaluation& e = ctx.evaluate(d.config, steps, "prune");
        if (!e.accepted()) continue;
        if (!best || e.speedup > best_speed ||
            (e.speedup == best_speed && d.config.size() < best->config.size())) {
          best = d;
          best_speed = e.speedup;
        }
      }
      const double floor = fastest * (1.0 - kPruneMaxLoss);  // slowest a kept drop may be
      if (!best || best_speed < floor) break;
      // Every harmless drop at once: one evaluation instead of a round per member. When
      // it holds, each member left was measured slower to drop: done.
      if (auto bulk = drop_all_harmless(ctx, current, round, floor)) {
        const Evaluation& e = ctx.evaluate(*bulk, steps, "prune");
        if (e.accepted() && e.speedup >= floor) {
          spdlog::info("[prune] without every harmless member: {:.3f}x (with them {:.3f}x)", e.speedup, current_speed);
          current = *bulk;
          ctx.best_combination = current;
          break;
        }
      }
      spdlog::info("[prune] without {}: {:.3f}x (with it {:.3f}x)", best->name, best_speed,
                   current_speed);
      current = best->config;
      current_speed = best_speed;
      fastest = std::max(fastest, best_speed);
      ctx.best_combination = current;
    }
    evaluate_memory_points(ctx, current, "prune");
  }
};

}  // namespace
SG_REGISTER_STRATEGY(Prune, "prune",
                     "drop members of the best combination while it is not slower without them")
}  // namespace sg::agent
