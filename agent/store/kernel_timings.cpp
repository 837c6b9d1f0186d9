// The kernel_trials and kernel_timings tables (schema v4): which kernel variant an
// evaluation ran, and each variant's timing in a kernel trial.
#include "agent/store/row_mapper.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

const RowMap<KernelTimingRow>& kernel_timing_map() {
  static const RowMap<KernelTimingRow> map{
      read_only(col("id", &KernelTimingRow::id)),
      SG_COLUMNS(KernelTimingRow, campaign_id, trial_id, family, params, micro_batch, fwd_us,
                 fwdbwd_us, matches_plain),
  };
  return map;
}

}  // namespace

void Store::add_kernel_trial(std::int64_t campaign_id, const std::string& family,
                             const nlohmann::json& params, std::int64_t evaluation_id) {
  // Idempotent: a resumed campaign re-records the same evaluation.
  write_exec(*this,
             "INSERT INTO kernel_trials(campaign_id, family, params_json, evaluation_id) SELECT "
             "?1, ?2, ?3, ?4 WHERE NOT EXISTS (SELECT 1 FROM kernel_trials WHERE evaluation_id = "
             "?4 AND family = ?2)",
             campaign_id, family, params.dump(), evaluation_id);
}

void Store::add_kernel_timings(const std::vector<KernelTimingRow>& rows) {
  write([&] {
    SQLite::Statement st(*db_,
                         kernel_timing_map().insert_sql("INSERT OR IGNORE INTO kernel_timings"));
    for (const auto& r : rows) kernel_timing_map().insert(st, r);
  });
}

std::vector<KernelTimingRow> Store::kernel_timings(std::int64_t campaign_id,
                                                   const std::string& family) {
  return kernel_timing_map().select_all(
      *db_, "FROM kernel_timings WHERE campaign_id = ?1 AND (?2 = '' OR family = ?2) ORDER BY id",
      campaign_id, family);
}

}  // namespace sg::agent
