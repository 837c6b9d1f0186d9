#include "agent/search/memory_points.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include <spdlog/spdlog.h>

namespace sg::agent {
namespace {

// Refinements per budget and int memory switch: the first lands on the cliff when the
// projections are linear in the value (interpolation), a second halves what is left.
constexpr int kCliffSteps = 2;

// A value of one memory switch tried on the combination, and its evaluation.
struct Point {
  std::int64_t value;
  const Evaluation* e;
};

// What a point is to one budget: usable (a preset could take it and the finals measure it:
// accepted, paired, fits the budget, and, where presets rank at the target, probed at the
// target micro-batch, as the finals run there on one GPU), over (it failed for memory:
// pruned, out of memory, over this budget, or its probe did not fit the target micro-batch),
// or other (slower, gate failure, ...: no memory cliff there).
enum class Fit { usable, over, other };

Fit fit_of(const Evaluation& e, double budget, bool rank_at_target) {
  if (e.disposition == Disposition::pruned || e.disposition == Disposition::oom) return Fit::over;
  if (!e.accepted() || !e.paired() || !e.memory_probed()) return Fit::other;
  if (e.projected_peak_bytes > budget) return Fit::over;
  if (rank_at_target && std::isnan(e.target_speedup)) return Fit::over;
  return Fit::usable;
}

std::optional<std::int64_t> as_int(const std::string& v) {
  bool ok = false;
  const std::int64_t x = parse_int(v, &ok);
  return ok ? std::optional<std::int64_t>(x) : std::nullopt;
}

// The values of dial `s` that take part: its candidates and the values searched so far, the
// default too unless it is a sentinel below every other value (CKPT_LAYERS' -1, "every
// layer", is not on the scale of the others; TEXT_CACHE_ENTRIES' default 256 is).
std::vector<std::int64_t> dial_values(const SwitchSpec& s) {
  std::vector<std::int64_t> out;
  const auto def = as_int(s.default_value);
  bool sentinel = def.has_value();
  for (const auto& v : s.values) {
    auto x = as_int(v);
    if (!x) continue;
    if (def && *x != *def && *x <= *def) sentinel = false;
    out.push_back(*x);
  }
  if (def && sentinel) out.erase(std::remove(out.begin(), out.end(), *def), out.end());
  return out;
}

// The evaluations at full_steps of `combination` with dial `s` at each of `values` (as
// make_candidate completes it: the dial's requires and kernel variants), in value order.
std::vector<Point> points_of(const SearchContext& ctx, const Config& combination,
                             const SwitchSpec& s, std::vector<std::int64_t> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  std::vector<Point> out;
  for (const auto v : values) {
    Config c = combination;
    c[s.name] = std::to_string(v);
    auto cand = ctx.make_candidate(c);
    if (!cand) continue;
    if (const Evaluation* e = ctx.find(*cand, ctx.options.full_steps)) out.push_back({v, e});
  }
  return out;
}

// The value to try between a usable point and the over point next to it: where the line
// through their projected peaks meets the budget, rounded toward the usable side, when the
// over point is over by its projection; else the midpoint. nullopt when no integer lies
// strictly between or the line puts the budget at the usable point itself.
std::optional<std::int64_t> between(const Point& usable, const Point& over, double budget) {
  const std::int64_t lo = std::min(usable.value, over.value),
                     hi = std::max(usable.value, over.value);
  if (hi - lo < 2) return std::nullopt;
  const double pu = usable.e->projected_peak_bytes, po = over.e->projected_peak_bytes;
  std::int64_t v = lo + (hi - lo) / 2;
  if (over.e->memory_probed() && std::isfinite(po) && po > budget && pu <= budget) {
    const double x = static_cast<double>(usable.value) +
                     (budget - pu) / (po - pu) * static_cast<double>(over.value - usable.value);
    v = static_cast<std::int64_t>(over.value > usable.value ? std::floor(x) : std::ceil(x));
  }
  if (v <= lo || v >= hi) return std::nullopt;
  return v;
}

// Toward each budget's cliff of int memory switch `s` on `combination`: where a usable
// value sits next to an over one with integers between, evaluates the value `between`
// picks, up to kCliffSteps times per budget (a dial like CKPT_LAYERS with candidates
// 0/4/8/16 finds the least recompute that still fits: on the H200, 8 fits a one-GPU
// probe at micro-batch 32 and 4 does not, 16 fits 80 GiB at the target and 8 does not).
void refine_toward_cliffs(SearchContext& ctx, const Config& combination, const SwitchSpec& s,
                          const std::string& strategy) {
  std::vector<std::int64_t> values = dial_values(s);
  for (const double budget : ctx.options.budget_bytes) {
    for (int step = 0; step < kCliffSteps; ++step) {
      const auto points = points_of(ctx, combination, s, values);
      std::optional<std::int64_t> next;
      for (std::size_t i = 0; i + 1 < points.size() && !next; ++i) {
        const Fit a = fit_of(*points[i].e, budget, ctx.options.rank_at_target);
        const Fit b = fit_of(*points[i + 1].e, budget, ctx.options.rank_at_target);
        if (a == Fit::usable && b == Fit::over) next = between(points[i], points[i + 1], budget);
        if (a == Fit::over && b == Fit::usable) next = between(points[i + 1], points[i], budget);
      }
      if (!next) break;
      Config c = combination;
      c[s.name] = std::to_string(*next);
      auto cand = ctx.make_candidate(c);
      if (!cand || ctx.find(*cand, ctx.options.full_steps) || ctx.contains_conflict(*cand)) break;
      spdlog::info("[{}] {}={}: between the values that fit {:.2f} GiB and those that do not",
                   strategy, s.name, *next, budget / (1024.0 * 1024.0 * 1024.0));
      values.push_back(*next);
      ctx.evaluate(*cand, ctx.options.full_steps, strategy);
    }
  }
}

}  // namespace

void evaluate_memory_points(SearchContext& ctx, const Config& combination,
                            const std::string& strategy) {
  if (combination.empty()) return;
  std::vector<const SwitchSpec*> memory;
  for (const auto& s : ctx.manifest.switches) {
    if (s.available && s.effect == "memory") memory.push_back(&s);
  }
  std::stable_sort(memory.begin(), memory.end(), [](const SwitchSpec* a, const SwitchSpec* b) {
    const auto rank = [](const SwitchSpec* s) {
      return s->type == "int" ? static_cast<int>(s->values.size()) : 0;
    };
    return rank(a) > rank(b);
  });
  for (const SwitchSpec* sp : memory) {
    const SwitchSpec& s = *sp;
    for (const auto& v : s.values) {
      if (v == s.default_value) continue;
      Config c = combination;
      c[s.name] = v;
      auto cand = ctx.make_candidate(c);
      if (!cand || *cand == combination || ctx.contains_conflict(*cand)) continue;
      ctx.evaluate(*cand, ctx.options.full_steps, strategy);
    }
    if (s.type == "int") refine_toward_cliffs(ctx, combination, s, strategy);
  }
}

}  // namespace sg::agent
