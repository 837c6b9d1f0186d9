// The target_finals table (schema v5): each budget's finalists paired against the
// baseline at the target micro-batch (the `finals` strategy).
#include "agent/store/row_mapper.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

constexpr int kFinalsSchema = 5;
constexpr int kIntervalSchema = 6;  // speedup_lo, speedup_hi

const RowMap<TargetFinalRow>& final_map() {
  static const RowMap<TargetFinalRow> map{
      col("id", &TargetFinalRow::id),
      col("campaign_id", &TargetFinalRow::campaign_id),
      col("budget_name", &TargetFinalRow::budget_name),
      col("budget_bytes", &TargetFinalRow::budget_bytes),
      col("evaluation_id", &TargetFinalRow::evaluation_id),
      col("config_key", &TargetFinalRow::config_key),
      col("micro_batch", &TargetFinalRow::micro_batch),
      col("steps", &TargetFinalRow::steps),
      col("rounds", &TargetFinalRow::rounds),
      col("disposition", &TargetFinalRow::disposition),
      col("reason", &TargetFinalRow::reason),
      col("speedup", &TargetFinalRow::speedup),
      col("speedup_spread", &TargetFinalRow::speedup_spread),
      col("samples_per_s", &TargetFinalRow::samples_per_s),
      col("baseline_samples_per_s", &TargetFinalRow::baseline_samples_per_s),
      col("trial_ids_json", &TargetFinalRow::trial_ids),
      col_or_nan("speedup_lo", &TargetFinalRow::speedup_lo, kIntervalSchema),
      col_or_nan("speedup_hi", &TargetFinalRow::speedup_hi, kIntervalSchema),
  };
  return map;
}

}  // namespace

void Store::set_target_finals(std::int64_t campaign_id, const std::vector<TargetFinalRow>& rows) {
  write([&] {
    exec(*db_, "DELETE FROM target_finals WHERE campaign_id = ?", campaign_id);
    SQLite::Statement st(*db_,
                         "INSERT INTO target_finals(campaign_id, budget_name, budget_bytes, "
                         "evaluation_id, config_key, micro_batch, steps, rounds, disposition, "
                         "reason, speedup, speedup_spread, samples_per_s, baseline_samples_per_s, "
                         "trial_ids_json, speedup_lo, speedup_hi) "
                         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    for (const auto& r : rows) {
      exec_again(st, campaign_id, r.budget_name, r.budget_bytes, r.evaluation_id, r.config_key,
                 r.micro_batch, r.steps, r.rounds, r.disposition, r.reason, r.speedup,
                 r.speedup_spread, r.samples_per_s, r.baseline_samples_per_s, ids_json(r.trial_ids),
                 r.speedup_lo, r.speedup_hi);
    }
  });
}

std::vector<TargetFinalRow> Store::target_finals(std::int64_t campaign_id) {
  const int version = schema_version();
  if (version < kFinalsSchema) return {};  // a read-only open of an older database
  return final_map().select_all_at(
      *db_, version, "FROM target_finals WHERE campaign_id = ? ORDER BY id", campaign_id);
}

}  // namespace sg::agent
