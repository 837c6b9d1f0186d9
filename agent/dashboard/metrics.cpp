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

void add_trial_counts(const MetricsSnapshot& m, prometheus::Registry& registry) {
  auto& trials = prometheus::BuildCounter()
                     .Name("speedgate_evaluations_total")
                     .Help("Evaluations: configurations judged by the gate, by disposition")
                     .Register(registry);
  std::size_t count = 0;
  const Disposition* dispositions = all_dispositions(&count);
  for (std::size_t i = 0; i < count; ++i) {
    trials.Add({{"disposition", std::string(to_string(dispositions[i]))}});
  }
  for (const auto& [disposition, n] : m.evaluation_dispositions) {
    trials.Add({{"disposition", disposition}}).Increment(n);
  }
  auto& runs = prometheus::BuildCounter()
                   .Name("speedgate_trainer_runs_total")
                   .Help("Trainer runs (baselines, candidates, speed repeats), by state")
                   .Register(registry);
  for (const auto& [state, n] : m.trial_states) runs.Add({{"state", state}}).Increment(n);
}

void add_presets(const MetricsSnapshot& m, prometheus::Registry& registry) {
  auto& speedup = prometheus::BuildGauge()
                      .Name("speedgate_preset_speedup_ratio")
                      .Help(
                          "Headline speedup of the newest preset: the paired figure at the target "
                          "micro-batch where there is one, else its evaluation's")
                      .Register(registry);
  auto& throughput = prometheus::BuildGauge()
                         .Name("speedgate_preset_samples_per_second")
                         .Help("Samples per second of the newest preset's configuration")
                         .Register(registry);
  auto& projected =
      prometheus::BuildGauge()
          .Name("speedgate_preset_projected_peak_bytes")
          .Help("Projected peak device memory at the target micro-batch and world size")
          .Register(registry);
  auto& measured = prometheus::BuildGauge()
                       .Name("speedgate_preset_measured_peak_bytes")
                       .Help("Largest measured peak allocated memory of the preset's runs")
                       .Register(registry);
  auto& budget = prometheus::BuildGauge()
                     .Name("speedgate_preset_budget_bytes")
                     .Help("Memory budget the preset was chosen for")
                     .Register(registry);
  for (const auto& p : m.presets) {
    const prometheus::Labels labels{{"preset", p.name}};
    const auto set = [&](prometheus::Family<prometheus::Gauge>& family, double v) {
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
  auto& campaigns = prometheus::BuildCounter()
                        .Name("speedgate_campaigns_total")
                        .Help("Campaigns recorded in the store, by state")
                        .Register(registry);
  for (const auto& [state, n] : m.campaign_states) campaigns.Add({{"state", state}}).Increment(n);
  auto& progress = prometheus::BuildGauge()
                       .Name("speedgate_campaign_trainer_runs")
                       .Help("Trainer runs of the newest campaign, by state (progress)")
                       .Register(registry);
  auto& best = prometheus::BuildGauge()
                   .Name("speedgate_campaign_best_speedup_ratio")
                   .Help("Best accepted speedup of the newest campaign")
                   .Register(registry);
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
  const std::string& fingerprint = m.newest_fingerprint;
  prometheus::BuildGauge()
      .Name("speedgate_info")
      .Help("speedgate version and the environment fingerprint of the newest campaign")
      .Register(registry)
      .Add({{"version", SPEEDGATE_VERSION},
            {"git_sha", SPEEDGATE_GIT_SHA},
            {"fingerprint", fingerprint}})
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
