#include "agent/dashboard/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <cmath>

#include "agent/common/disposition.hpp"
#include "agent/store/queries/dashboard_queries.hpp"
#include "speedgate_build_info.hpp"

namespace sg::agent::dashboard {
namespace {

double number(const SQLite::Column& c) {
  if (c.isInteger() || c.isFloat()) return c.getDouble();
  return std::nan("");
}

void add_trial_counts(SQLite::Database& db, prometheus::Registry& registry) {
  auto& trials = prometheus::BuildCounter()
                     .Name("speedgate_evaluations_total")
                     .Help("Evaluations: configurations judged by the gate, by disposition")
                     .Register(registry);
  std::size_t count = 0;
  const Disposition* dispositions = all_dispositions(&count);
  for (std::size_t i = 0; i < count; ++i) {
    trials.Add({{"disposition", std::string(to_string(dispositions[i]))}});
  }
  SQLite::Statement q(db, "SELECT disposition, COUNT(*) FROM evaluations GROUP BY disposition");
  while (q.executeStep()) {
    trials.Add({{"disposition", q.getColumn(0).getString()}}).Increment(q.getColumn(1).getDouble());
  }
  auto& runs = prometheus::BuildCounter()
                   .Name("speedgate_trainer_runs_total")
                   .Help("Trainer runs (baselines, candidates, speed repeats), by state")
                   .Register(registry);
  SQLite::Statement r(db, "SELECT state, COUNT(*) FROM trials GROUP BY state");
  while (r.executeStep()) {
    runs.Add({{"state", r.getColumn(0).getString()}}).Increment(r.getColumn(1).getDouble());
  }
}

void add_presets(SQLite::Database& db, prometheus::Registry& registry) {
  auto& speedup = prometheus::BuildGauge()
                      .Name("speedgate_preset_speedup_ratio")
                      .Help("Headline speedup of the newest preset: the paired figure at the target "
                            "micro-batch where there is one, else its evaluation's")
                      .Register(registry);
  auto& throughput = prometheus::BuildGauge()
                         .Name("speedgate_preset_samples_per_second")
                         .Help("Samples per second of the newest preset's configuration")
                         .Register(registry);
  auto& projected = prometheus::BuildGauge()
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
  SQLite::Statement q(db,
      "SELECT p.name, p.speedup, v.samples_per_s, p.projected_peak_bytes, p.budget_bytes, "
      "(SELECT MAX(t.peak_allocated_bytes) FROM json_each(p.trial_ids_json) j "
      " JOIN trials t ON t.id = j.value), p.campaign_id, p.evaluation_id, p.speedup_spread "
      "FROM presets p LEFT JOIN evaluations v "
      "ON v.id = p.evaluation_id WHERE p.id IN (SELECT MAX(id) FROM presets GROUP BY name)");
  while (q.executeStep()) {
    const prometheus::Labels labels{{"preset", q.getColumn(0).getString()}};
    const auto set = [&](prometheus::Family<prometheus::Gauge>& family, int column) {
      const double v = number(q.getColumn(column));
      if (std::isfinite(v)) family.Add(labels).Set(v);
    };
    nlohmann::json preset = {{"name", q.getColumn(0).getString()}, {"campaign_id", q.getColumn(6).getInt64()},
                              {"speedup", number(q.getColumn(1))}, {"speedup_spread", number(q.getColumn(8))}};
    if (!q.getColumn(7).isNull()) preset["evaluation_id"] = q.getColumn(7).getInt64();
    const nlohmann::json headline = preset_headline(db, preset);
    if (headline["speedup"].is_number() && std::isfinite(headline["speedup"].get<double>())) {
      speedup.Add(labels).Set(headline["speedup"].get<double>());
    }
    set(throughput, 2);
    set(projected, 3);
    set(budget, 4);
    set(measured, 5);
  }
}

void add_campaigns(SQLite::Database& db, prometheus::Registry& registry) {
  auto& campaigns = prometheus::BuildCounter()
                        .Name("speedgate_campaigns_total")
                        .Help("Campaigns recorded in the store, by state")
                        .Register(registry);
  SQLite::Statement c(db, "SELECT state, COUNT(*) FROM campaigns GROUP BY state");
  while (c.executeStep()) {
    campaigns.Add({{"state", c.getColumn(0).getString()}}).Increment(c.getColumn(1).getDouble());
  }
  auto& progress = prometheus::BuildGauge()
                       .Name("speedgate_campaign_trainer_runs")
                       .Help("Trainer runs of the newest campaign, by state (progress)")
                       .Register(registry);
  auto& best = prometheus::BuildGauge()
                   .Name("speedgate_campaign_best_speedup_ratio")
                   .Help("Best accepted speedup of the newest campaign")
                   .Register(registry);
  SQLite::Statement latest(db, "SELECT id FROM campaigns ORDER BY id DESC LIMIT 1");
  if (!latest.executeStep()) return;
  const auto id = latest.getColumn(0).getInt64();
  const std::string campaign = std::to_string(id);
  for (const char* state : {"queued", "running", "finished"}) {
    progress.Add({{"campaign", campaign}, {"state", state}}).Set(0);
  }
  SQLite::Statement q(db, "SELECT state, COUNT(*) FROM trials WHERE campaign_id = ? GROUP BY state");
  q.bind(1, id);
  while (q.executeStep()) {
    progress.Add({{"campaign", campaign}, {"state", q.getColumn(0).getString()}})
        .Set(q.getColumn(1).getDouble());
  }
  SQLite::Statement b(db,
      "SELECT MAX(" + finite("speedup") + ") FROM evaluations "
      "WHERE campaign_id = ? AND disposition = 'accepted'");  // not the text 'NaN' of an unpaired drop
  b.bind(1, id);
  if (b.executeStep()) {
    const double v = number(b.getColumn(0));
    if (std::isfinite(v)) best.Add({{"campaign", campaign}}).Set(v);
  }
}

void add_info(SQLite::Database& db, prometheus::Registry& registry) {
  std::string fingerprint;
  SQLite::Statement q(db,
      "SELECT e.fingerprint_hash FROM campaigns c JOIN environments e ON e.id = c.environment_id "
      "ORDER BY c.id DESC LIMIT 1");
  if (q.executeStep()) fingerprint = q.getColumn(0).getString();
  prometheus::BuildGauge()
      .Name("speedgate_info")
      .Help("speedgate version and the environment fingerprint of the newest campaign")
      .Register(registry)
      .Add({{"version", SPEEDGATE_VERSION}, {"git_sha", SPEEDGATE_GIT_SHA}, {"fingerprint", fingerprint}})
      .Set(1);
}

}  // namespace

std::string render_metrics(SQLite::Database& db) {
  prometheus::Registry registry;
  add_trial_counts(db, registry);
  add_presets(db, registry);
  add_campaigns(db, registry);
  add_info(db, registry);
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

}  // namespace sg::agent::dashboard
