// The target_finals table (schema v5): each budget's finalists paired against the
// baseline at the target micro-batch (the `finals` strategy).
#include <fmt/format.h>

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

void bind_final(SQLite::Statement& st, std::int64_t campaign_id, const TargetFinalRow& r) {
  st.bind(1, campaign_id);
  st.bind(2, r.budget_name);
  bind_real(st, 3, r.budget_bytes);
  st.bind(4, r.evaluation_id);
  st.bind(5, r.config_key);
  st.bind(6, r.micro_batch);
  st.bind(7, r.steps);
  st.bind(8, r.rounds);
  st.bind(9, std::string(to_string(r.disposition)));
  st.bind(10, r.reason);
  bind_real(st, 11, r.speedup);
  bind_real(st, 12, r.speedup_spread);
  bind_real(st, 13, r.samples_per_s);
  bind_real(st, 14, r.baseline_samples_per_s);
  st.bind(15, ids_json(r.trial_ids));
  bind_real(st, 16, r.speedup_lo);
  bind_real(st, 17, r.speedup_hi);
}

}  // namespace

void Store::set_target_finals(std::int64_t campaign_id, const std::vector<TargetFinalRow>& rows) {
  write([&] {
    SQLite::Statement clear(*db_, "DELETE FROM target_finals WHERE campaign_id = ?");
    clear.bind(1, campaign_id);
    clear.exec();
    SQLite::Statement st(*db_,
                         "INSERT INTO target_finals(campaign_id, budget_name, budget_bytes, "
                         "evaluation_id, config_key, micro_batch, steps, rounds, disposition, "
                         "reason, speedup, speedup_spread, samples_per_s, baseline_samples_per_s, "
                         "trial_ids_json, speedup_lo, speedup_hi) "
                         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    for (const auto& r : rows) {
      st.reset();
      bind_final(st, campaign_id, r);
      st.exec();
    }
  });
}

std::vector<TargetFinalRow> Store::target_finals(std::int64_t campaign_id) {
  const int version = schema_version();
  if (version < kFinalsSchema) return {};  // a read-only open of an older database
  SQLite::Statement q(*db_, fmt::format("SELECT {} FROM target_finals WHERE campaign_id = ? "
                                        "ORDER BY id",
                                        final_map().select_list(version)));
  q.bind(1, campaign_id);
  return final_map().read_all(q);
}

}  // namespace sg::agent
