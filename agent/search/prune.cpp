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
//     Otherwise the single best drop is taken and rounds repeat until none is taken, or
//     until SearchOptions::prune_rounds rounds (--prune-rounds) have taken a drop;
//  3. the pruned combination with each memory switch value (frontier points,
//     agent/search/memory_points.hpp), as stack does for its own.
// What a drop measures: only a drop that is taken can become a preset, so drops are
// compared on speed alone and the one taken is evaluated again in full (its stored trials
// are reused; only what is missing runs) and is not taken if that puts it over every
// budget. Where the memory probes run at the target micro-batch (--probe-at-target), drops
// are compared there (Measure::target_probe: gate run + probe, speed = the probe's samples/s
// over the baseline's): on the H200 the pairs at micro-batch 8 are host-bound and noisy
// (single pairs of one configuration moved by +-15 %, FUSED_ADALN measured 0.90x there and
// 1.06x at 32, and dropping it cost 12-17 % at 32), while the probes at 32 of drops that do
// not matter agreed within a few percent. Otherwise drops are compared on their speed pairs
// without the probe (Measure::speed_pairs).
// Rounds: each round re-measures every member against single noisy pairs, and the fastest
// of ~18 noisy drops beats the current combination by chance; the sixth H200 campaign spent
// 11 of its 23 minutes in rounds two and three. A campaign that cannot afford that sets
// --prune-rounds 1.
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
#include <cmath>
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

// How prune compares combinations: at the target micro-batch where the probes run there,
// else by the speed pairs.
Measure drop_measure(const SearchContext& ctx) {
  return ctx.options.rank_at_target ? Measure::target_probe : Measure::speed_pairs;
}

// The speed prune compares; NaN when `e` has none (not accepted, or not measured that way).
double speed_of(const Evaluation& e, Measure m) {
  if (!e.accepted()) return std::nan("");
  return m == Measure::target_probe ? e.target_speedup : e.speedup;
}

// `current` without every member whose own drop (in `round`, already evaluated) was
// accepted at `floor` or faster; nullopt unless that is two or more drops.
std::optional<Config> drop_all_harmless(SearchContext& ctx, const Config& current,
                                        const std::vector<Drop>& round, double floor, Measure m) {
  Config rest = current;
  int harmless = 0;
  for (const auto& d : round) {
    const Evaluation* e = ctx.find(d.config, ctx.options.full_steps);
    if (!e || !(speed_of(*e, m) >= floor)) continue;
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

// Evaluates `c` in full (what its drop evaluation did not measure); false (logged) when
// that leaves it not accepted (over every budget, the probe failed, slower in its pairs).
bool accepted_in_full(SearchContext& ctx, const Config& c, int steps) {
  const Evaluation& e = ctx.evaluate(c, steps, "prune", Measure::full);
  if (e.accepted()) return true;
  spdlog::info("[prune] {} not taken: {} when evaluated in full ({})", config_label(c),
               to_string(e.disposition), e.reason);
  return false;
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
    Measure m = drop_measure(ctx);
    if (std::isnan(speed_of(start, m)))
      m = Measure::speed_pairs;  // its probe did not run at the target
    double current_speed = speed_of(start, m), fastest = current_speed;
    const int max_rounds = ctx.options.prune_rounds;
    for (int taken = 0;; ++taken) {
      if (max_rounds > 0 && taken == max_rounds) {
        spdlog::info("[prune] stopped after {} round(s) that took a drop (--prune-rounds)", taken);
        break;
      }
      const std::vector<Drop> round = drops_of(ctx, current);
      std::vector<Config> configs;
      for (const auto& d : round) configs.push_back(d.config);
      ctx.prefetch(configs, steps, m);  // the gate runs (and probes) are independent
      std::optional<Drop> best;
      double best_speed = 0;
      for (const auto& d : round) {
        const double speed = speed_of(ctx.evaluate(d.config, steps, "prune", m), m);
        if (std::isnan(speed)) continue;
        if (!best || speed > best_speed ||
            (speed == best_speed && d.config.size() < best->config.size())) {
          best = d;
          best_speed = speed;
        }
      }
      const double floor = fastest * (1.0 - kPruneMaxLoss);  // slowest a kept drop may be
      if (!best || best_speed < floor) break;
      // Every harmless drop at once: one evaluation instead of a round per member. When
      // it holds, each member left was measured slower to drop: done.
      if (auto bulk = drop_all_harmless(ctx, current, round, floor, m)) {
        const double bulk_speed = speed_of(ctx.evaluate(*bulk, steps, "prune", m), m);
        if (bulk_speed >= floor && accepted_in_full(ctx, *bulk, steps)) {
          spdlog::info("[prune] without every harmless member: {:.3f}x (with them {:.3f}x)",
                       bulk_speed, current_speed);
          current = *bulk;
          ctx.best_combination = current;
          break;
        }
      }
      if (!accepted_in_full(ctx, best->config, steps)) break;
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
