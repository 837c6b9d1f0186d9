#include <algorithm>

#include <spdlog/spdlog.h>

#include "agent/protocol/kernel_params.hpp"
#include "agent/search/strategy.hpp"

namespace sg::agent {

StrategyRegistry& StrategyRegistry::instance() {
  static StrategyRegistry r;
  return r;
}

bool StrategyRegistry::add(const std::string& name, const std::string& summary, StrategyFactory f) {
  return entries_.emplace(name, std::make_pair(summary, std::move(f))).second;
}

std::unique_ptr<Strategy> StrategyRegistry::create(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.second();
}

std::vector<std::string> StrategyRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : entries_) out.push_back(k);
  return out;
}

std::string StrategyRegistry::summary(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? "" : it->second.first;
}

std::vector<std::string> default_plan() { return {"screen", "halving", "local", "greedy"}; }

const Evaluation* SearchContext::find(const Config& c, int steps) const {
  for (const auto& e : history_) {
    if (e.steps == steps && e.config == c) return &e;
  }
  return nullptr;
}

namespace {
// A memoised evaluation answers a request unless it passed the gate without measuring what
// the request needs.
bool answers(const Evaluation& e, Measure measure) {
  if (!e.correct()) return true;
  switch (measure) {
    case Measure::speed_pairs:
      return e.paired();
    case Measure::target_probe:
      return e.memory_probed();
    case Measure::full:
      break;
  }
  return e.paired() && e.memory_probed();
}
}  // namespace

void SearchContext::prefetch(const std::vector<Config>& configs, int steps, Measure measure) {
  std::vector<Config> todo;
  for (const auto& c : configs) {
    const Evaluation* e = find(c, steps);
    if (!e || !answers(*e, measure)) todo.push_back(c);
  }
  if (!todo.empty()) evaluator.prefetch(todo, steps, measure);
}

const Evaluation& SearchContext::evaluate(const Config& c, int steps, const std::string& strategy,
                                          Measure measure) {
  const Evaluation* known = find(c, steps);
  if (known && answers(*known, measure)) return *known;
  Evaluation e = evaluator.evaluate(c, steps, strategy, measure);
  spdlog::info("[{}] {} @{} steps: {} {}", strategy, config_label(c), steps,
               to_string(e.disposition), e.reason);
  if (known) {
    Evaluation& slot = history_[static_cast<std::size_t>(known - history_.data())];
    slot = std::move(e);
    return slot;
  }
  history_.push_back(std::move(e));
  return history_.back();
}

Evaluation SearchContext::evaluate_combination(const Config& c, const std::string& strategy) {
  Evaluation e = evaluate(c, options.full_steps, strategy);
  if (e.disposition == Disposition::gate_failed) {
    pending_minify.push_back(c);
    run_strategy("minify");
  }
  return e;
}

bool SearchContext::contains_conflict(const Config& c) const {
  for (const auto& bad : conflicts) {
    bool all = !bad.empty();
    for (const auto& [k, v] : bad) {
      auto it = c.find(k);
      if (it == c.end() || it->second != v) {
        all = false;
        break;
      }
    }
    if (all) return true;
  }
  return false;
}

void SearchContext::offer_single(const std::string& switch_name, const Evaluation& e) {
  if (!e.accepted() || !e.paired() || e.steps != options.full_steps || e.config.empty()) return;
  auto it = best_single.find(switch_name);
  if (it == best_single.end() || e.speedup > it->second.speedup) best_single[switch_name] = e;
}

bool SearchContext::runs_after(const std::string& strategy, const std::string& later) const {
  auto at = std::find(plan.begin(), plan.end(), strategy);
  return at != plan.end() && std::find(at + 1, plan.end(), later) != plan.end();
}

void SearchContext::run_strategy(const std::string& name) {
  auto s = StrategyRegistry::instance().create(name);
  if (!s) throw std::invalid_argument("unknown strategy " + name);
  s->run(*this);
}

std::optional<Config> SearchContext::make_candidate(Config c) const {
  c = normalize(c, manifest);
  if (!close_requires(c, manifest)) return std::nullopt;
  for (const auto& [kernel, params] : kernel_choice) {
    const KernelFamily* f = find_kernel_family(manifest, kernel);
    auto on = f ? c.find(f->switch_name) : c.end();
    if (on != c.end() && !c.count(kernel)) c[kernel] = params;  // the switch is on (non-default)
  }
  if (Problem err = validate_config(c, manifest)) {
    spdlog::debug("skipping {}: {}", config_label(c), *err);
    return std::nullopt;
  }
  return c;
}

}  // namespace sg::agent
