// The baselines, evaluations and projections tables: the gate's verdicts per
// configuration and step budget, and the memory projections behind them.
#include "agent/store/evaluations.hpp"

#include <fmt/format.h>

#include "agent/protocol/config.hpp"
#include "agent/store/row_mapper.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

constexpr int kIntervalSchema = 6;  // speedup_lo, speedup_hi, pairs

const RowMap<EvaluationRow>& evaluation_map() {
  static const RowMap<EvaluationRow> map{
      col("id", &EvaluationRow::id),
      col("campaign_id", &EvaluationRow::campaign_id),
      col("strategy", &EvaluationRow::strategy),
      col("config_key", &EvaluationRow::config_key),
      col("steps", &EvaluationRow::steps),
      col("disposition", &EvaluationRow::disposition),
      col("gate_class", &EvaluationRow::gate_class),
      col("reason", &EvaluationRow::reason),
      col("speedup", &EvaluationRow::speedup),
      col("speedup_spread", &EvaluationRow::speedup_spread),
      col("samples_per_s", &EvaluationRow::samples_per_s),
      col("projected_peak_bytes", &EvaluationRow::projected_peak_bytes),
      col("trial_ids_json", &EvaluationRow::trial_ids),
      col("on_frontier", &EvaluationRow::on_frontier),
      col_or_nan("speedup_lo", &EvaluationRow::speedup_lo, kIntervalSchema),
      col_or_nan("speedup_hi", &EvaluationRow::speedup_hi, kIntervalSchema),
      col("pairs", &EvaluationRow::pairs, kIntervalSchema),
  };
  return map;
}

const RowMap<ProjectionRow>& projection_map() {
  static const RowMap<ProjectionRow> map{
      col("campaign_id", &ProjectionRow::campaign_id),
      col("config_key", &ProjectionRow::config_key),
      col("target_micro_batch", &ProjectionRow::target_micro_batch),
      col("world_size", &ProjectionRow::world_size),
      col("zero_stage", &ProjectionRow::zero_stage),
      col("inputs_json", &ProjectionRow::inputs),
      col("projected_bytes", &ProjectionRow::projected_bytes),
      col("measured_bytes", &ProjectionRow::measured_bytes),
      col("relative_error", &ProjectionRow::relative_error),
  };
  return map;
}

// The id of the evaluation of (campaign, config, steps), or 0.
std::int64_t existing_evaluation(SQLite::Database& db, const EvaluationRow& e) {
  SQLite::Statement old(
      db, "SELECT id FROM evaluations WHERE campaign_id = ? AND config_key = ? AND steps = ?");
  old.bind(1, e.campaign_id);
  old.bind(2, e.config_key);
  old.bind(3, e.steps);
  return old.executeStep() ? old.getColumn(0).getInt64() : 0;
}

constexpr const char* kUpdateEvaluation =
    "UPDATE evaluations SET campaign_id = ?, strategy = ?, config_key = ?, config_json = ?, "
    "steps = ?, disposition = ?, gate_class = ?, reason = ?, speedup = ?, speedup_spread = ?, "
    "samples_per_s = ?, projected_peak_bytes = ?, trial_ids_json = ?, speedup_lo = ?, "
    "speedup_hi = ?, pairs = ? WHERE id = ?";
constexpr const char* kInsertEvaluation =
    "INSERT INTO evaluations(campaign_id, strategy, config_key, config_json, steps, disposition, "
    "gate_class, reason, speedup, speedup_spread, samples_per_s, projected_peak_bytes, "
    "trial_ids_json, speedup_lo, speedup_hi, pairs) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";

void bind_evaluation(SQLite::Statement& st, const EvaluationRow& e) {
  st.bind(1, e.campaign_id);
  st.bind(2, e.strategy);
  st.bind(3, e.config_key);
  st.bind(4, nlohmann::json(config_from_key(e.config_key)).dump());
  st.bind(5, e.steps);
  st.bind(6, std::string(to_string(e.disposition)));
  st.bind(7, e.gate_class);
  st.bind(8, e.reason);
  bind_real(st, 9, e.speedup);
  bind_real(st, 10, e.speedup_spread);
  bind_real(st, 11, e.samples_per_s);
  bind_real(st, 12, e.projected_peak_bytes);
  st.bind(13, ids_json(e.trial_ids));
  bind_real(st, 14, e.speedup_lo);
  bind_real(st, 15, e.speedup_hi);
  st.bind(16, e.pairs);
}

}  // namespace

void Store::add_baseline(std::int64_t campaign_id, int steps, const std::string& role, int seed,
                         std::int64_t trial_id) {
  write([&] {
    SQLite::Statement st(*db_,
                         "INSERT OR REPLACE INTO baselines(campaign_id, steps, role, seed, "
                         "trial_id) VALUES(?,?,?,?,?)");
    st.bind(1, campaign_id);
    st.bind(2, steps);
    st.bind(3, role);
    st.bind(4, seed);
    st.bind(5, trial_id);
    st.exec();
  });
}

std::int64_t Store::add_evaluation(const EvaluationRow& e) {
  std::int64_t id = 0;
  write([&] {
    // One row per (campaign, config, steps): a resumed campaign re-derives the same
    // verdict from its stored trials and updates the row in place (presets and
    // kernel_trials may reference it) instead of duplicating it.
    id = existing_evaluation(*db_, e);
    SQLite::Statement st(*db_, id ? kUpdateEvaluation : kInsertEvaluation);
    bind_evaluation(st, e);
    if (id) st.bind(17, id);
    st.exec();
    if (!id) id = db_->getLastInsertRowid();
  });
  return id;
}

std::vector<EvaluationRow> Store::evaluations(std::int64_t campaign_id) {
  // A read-only open of a database older than version 6 has no interval columns.
  SQLite::Statement q(*db_, fmt::format("SELECT {} FROM evaluations WHERE campaign_id = ? "
                                        "ORDER BY id",
                                        evaluation_map().select_list(schema_version())));
  q.bind(1, campaign_id);
  return evaluation_map().read_all(q);
}

void Store::set_frontier(std::int64_t campaign_id,
                         const std::vector<std::int64_t>& evaluation_ids) {
  write([&] {
    SQLite::Statement clr(*db_, "UPDATE evaluations SET on_frontier = 0 WHERE campaign_id = ?");
    clr.bind(1, campaign_id);
    clr.exec();
    SQLite::Statement st(*db_, "UPDATE evaluations SET on_frontier = 1 WHERE id = ?");
    for (auto id : evaluation_ids) {
      st.reset();
      st.bind(1, id);
      st.exec();
    }
  });
}

void Store::add_projection(const ProjectionRow& p) {
  write([&] {
    SQLite::Statement st(*db_,
                         "INSERT INTO projections(campaign_id, config_key, target_micro_batch, "
                         "world_size, zero_stage, inputs_json, projected_bytes, measured_bytes, "
                         "relative_error) VALUES(?,?,?,?,?,?,?,?,?)");
    st.bind(1, p.campaign_id);
    st.bind(2, p.config_key);
    st.bind(3, p.target_micro_batch);
    st.bind(4, p.world_size);
    st.bind(5, p.zero_stage);
    st.bind(6, p.inputs.dump());
    bind_real(st, 7, p.projected_bytes);
    bind_real(st, 8, p.measured_bytes);
    bind_real(st, 9, p.relative_error);
    st.exec();
  });
}

std::vector<ProjectionRow> Store::projections(std::int64_t campaign_id,
                                              const std::string& config_key) {
  SQLite::Statement q(*db_, fmt::format("SELECT {} FROM projections WHERE campaign_id = ? AND "
                                        "config_key = ? ORDER BY id",
                                        projection_map().select_list()));
  q.bind(1, campaign_id);
  q.bind(2, config_key);
  return projection_map().read_all(q);
}

}  // namespace sg::agent
