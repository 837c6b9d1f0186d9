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
      read_only(col("id", &TargetFinalRow::id)),
      SG_COLUMNS(TargetFinalRow, campaign_id, budget_name, budget_bytes, evaluation_id, config_key,
                 micro_batch, steps, rounds, disposition, reason, speedup, speedup_spread,
                 samples_per_s, baseline_samples_per_s),
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
    SQLite::Statement st(*db_, final_map().insert_sql("INSERT INTO target_finals"));
    for (TargetFinalRow r : rows) {
      r.campaign_id = campaign_id;
      final_map().insert(st, r);
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
