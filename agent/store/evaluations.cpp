// The baselines, evaluations and projections tables: the gate's verdicts per
// configuration and step budget, and the memory projections behind them.
#include "agent/store/evaluations.hpp"

#include "agent/protocol/config.hpp"
#include "agent/store/row_mapper.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

constexpr int kIntervalSchema = 6;  // speedup_lo, speedup_hi, pairs

const RowMap<EvaluationRow>& evaluation_map() {
  static const RowMap<EvaluationRow> map{
      SG_COLUMNS(EvaluationRow, id, campaign_id, strategy, config_key, steps, disposition,
                 gate_class, reason, speedup, speedup_spread, samples_per_s, projected_peak_bytes),
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
      SG_COLUMNS(ProjectionRow, campaign_id, config_key, target_micro_batch, world_size,
                 zero_stage),
      col("inputs_json", &ProjectionRow::inputs),
      SG_COLUMNS(ProjectionRow, projected_bytes, measured_bytes, relative_error),
  };
  return map;
}

// The id of the evaluation of (campaign, config, steps), or 0.
std::int64_t existing_evaluation(SQLite::Database& db, const EvaluationRow& e) {
  return query_one(db,
                   "SELECT id FROM evaluations WHERE campaign_id = ? AND config_key = ? AND "
                   "steps = ?",
                   first_int64, e.campaign_id, e.config_key, e.steps)
      .value_or(0);
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

// Runs sql with e's values bound to ?1..?16 and `more` after them.
template <class... More>
void exec_evaluation(SQLite::Database& db, const char* sql, const EvaluationRow& e,
                     const More&... more) {
  exec(db, sql, e.campaign_id, e.strategy, e.config_key,
       nlohmann::json(config_from_key(e.config_key)).dump(), e.steps, e.disposition, e.gate_class,
       e.reason, e.speedup, e.speedup_spread, e.samples_per_s, e.projected_peak_bytes,
       ids_json(e.trial_ids), e.speedup_lo, e.speedup_hi, e.pairs, more...);
}

}  // namespace

void Store::add_baseline(std::int64_t campaign_id, int steps, const std::string& role, int seed,
                         std::int64_t trial_id) {
  write_exec(*this,
             "INSERT OR REPLACE INTO baselines(campaign_id, steps, role, seed, trial_id) "
             "VALUES(?,?,?,?,?)",
             campaign_id, steps, role, seed, trial_id);
}

std::int64_t Store::add_evaluation(const EvaluationRow& e) {
  std::int64_t id = 0;
  write([&] {
    // One row per (campaign, config, steps): a resumed campaign re-derives the same
    // verdict from its stored trials and updates the row in place (presets and
    // kernel_trials may reference it) instead of duplicating it.
    id = existing_evaluation(*db_, e);
    if (id) {
      exec_evaluation(*db_, kUpdateEvaluation, e, id);
    } else {
      exec_evaluation(*db_, kInsertEvaluation, e);
      id = db_->getLastInsertRowid();
    }
  });
  return id;
}

std::vector<EvaluationRow> Store::evaluations(std::int64_t campaign_id) {
  // A read-only open of a database older than version 6 has no interval columns.
  return evaluation_map().select_all_at(
      *db_, schema_version(), "FROM evaluations WHERE campaign_id = ? ORDER BY id", campaign_id);
}

void Store::set_frontier(std::int64_t campaign_id,
                         const std::vector<std::int64_t>& evaluation_ids) {
  write([&] {
    exec(*db_, "UPDATE evaluations SET on_frontier = 0 WHERE campaign_id = ?", campaign_id);
    SQLite::Statement st(*db_, "UPDATE evaluations SET on_frontier = 1 WHERE id = ?");
    for (auto id : evaluation_ids) exec_again(st, id);
  });
}

void Store::add_projection(const ProjectionRow& p) {
  write([&] { projection_map().insert(*db_, "INSERT INTO projections", p); });
}

std::vector<ProjectionRow> Store::projections(std::int64_t campaign_id,
                                              const std::string& config_key) {
  return projection_map().select_all(
      *db_, "FROM projections WHERE campaign_id = ? AND config_key = ? ORDER BY id", campaign_id,
      config_key);
}

}  // namespace sg::agent
