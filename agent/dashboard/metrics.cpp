#include "agent/dashboard/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <cmath>

#include "agent/common/disposition.hpp"
#include "agent/store/queries/metrics_queries.hpp"
#include "speedgate_build_info.hpp"

namespace sg::agent::dashboard {
namespace {

using Counters = prometheus::Family<prometheus::Counter>;
using Gauges = prometheus::Family<prometheus::Gauge>;

Counters& counter(prometheus::Registry& registry, const std::string& name,
                  const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

Gauges& gauge(prometheus::Registry& registry, const std::string& name, const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}

void add_trial_counts(const MetricsSnapshot& m, prometheus::Registry& registry) {
  auto& trials = counter(registry, "speedgate_evaluations_total",
                         "Evaluations: configurations judged by the gate, by disposition");
  std::size_t count = 0;
  const Disposition* dispositions = all_dispositions(&count);
  for (std::size_t i = 0; i < count; ++i) {
    trials.Add({{"disposition", std::string(to_string(dispositions[i]))}});
  }
  for (const auto& [disposition, n] : m.evaluation_dispositions) {
    trials.Add({{"disposition", disposition}}).Increment(n);
  }
  auto& runs = counter(registry, "speedgate_trainer_runs_total",
                       "Trainer runs (baselines, candidates, speed repeats), by state");
  for (const auto& [state, n] : m.trial_states) runs.Add({{"state", state}}).Increment(n);
}

void add_presets(const MetricsSnapshot& m, prometheus::Registry& registry) {
  auto& speedup = gauge(registry, "speedgate_preset_speedup_ratio",
                        "Headline speedup of the newest preset: the paired figure at the target "
                        "micro-batch where there is one, else its evaluation's");
  auto& throughput = gauge(registry, "speedgate_preset_samples_per_second",
                           "Samples per second of the newest preset's configuration");
  auto& projected = gauge(registry, "speedgate_preset_projected_peak_bytes",
                          "Projected peak device memory at the target micro-batch and world size");
  auto& measured = gauge(registry, "speedgate_preset_measured_peak_bytes",
                         "Largest measured peak allocated memory of the preset's runs");
  auto& budget =
      gauge(registry, "speedgate_preset_budget_bytes", "Memory budget the preset was chosen for");
  for (const auto& p : m.presets) {
    const prometheus::Labels labels{{"preset", p.name}};
    const auto set = [&](Gauges& family, double v) {
      if (std::isfinite(v)) family.Add(labels).Set(v);
    };
    const nlohmann::json& headline = p.headline;
    if (headline["speedup"].is_number() && std::isfinite(headline["speedup"].get<double>())) {
      speedup.Add(labels).Set(headline["speedup"].get<double>());
    }
    set(throughput, p.samples_per_s);
    set(projected, p.projected_peak_bytes);
    set(budget, p.budget_bytes);
    set(measured, p.measured_peak_bytes);
  }
}

void add_campaigns(const MetricsSnapshot& m, prometheus::Registry& registry) {
  auto& campaigns =
      counter(registry, "speedgate_campaigns_total", "Campaigns recorded in the store, by state");
  for (const auto& [state, n] : m.campaign_states) campaigns.Add({{"state", state}}).Increment(n);
  auto& progress = gauge(registry, "speedgate_campaign_trainer_runs",
                         "Trainer runs of the newest campaign, by state (progress)");
  auto& best = gauge(registry, "speedgate_campaign_best_speedup_ratio",
                     "Best accepted speedup of the newest campaign");
  if (!m.newest) return;
  const std::string campaign = std::to_string(m.newest->id);
  for (const char* state : {"queued", "running", "finished"}) {
    progress.Add({{"campaign", campaign}, {"state", state}}).Set(0);
  }
  for (const auto& [state, n] : m.newest->trial_states) {
    progress.Add({{"campaign", campaign}, {"state", state}}).Set(n);
  }
  const double v = m.newest->best_accepted_speedup;
  if (std::isfinite(v)) best.Add({{"campaign", campaign}}).Set(v);
}

void add_info(const MetricsSnapshot& m, prometheus::Registry& registry) {
  gauge(registry, "speedgate_info",
        "speedgate version and the environment fingerprint of the newest campaign")
      .Add({{"version", SPEEDGATE_VERSION},
            {"git_sha", SPEEDGATE_GIT_SHA},
            {"fingerprint", m.newest_fingerprint}})
      .Set(1);
}

}  // namespace

std::string render_metrics(Store& store) {
  const MetricsSnapshot m = read_metrics(store);
  prometheus::Registry registry;
  add_trial_counts(m, registry);
  add_presets(m, registry);
  add_campaigns(m, registry);
  add_info(m, registry);
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

}  // namespace sg::agent::dashboard
