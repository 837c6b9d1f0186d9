// The store's speed evidence (schema v6): every ABAB pair behind a verdict, the host's
// A/A noise and the rounding band per step budget. Reads of an older database opened
// read-only return nothing.
#include "agent/store/row_mapper.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

namespace {

constexpr int kSpeedSchema = 6;

const RowMap<SpeedPairRow>& speed_pair_map() {
  static const RowMap<SpeedPairRow> map{
      col("campaign_id", &SpeedPairRow::campaign_id),
      id_or_null("evaluation_id", &SpeedPairRow::evaluation_id),  // NULL: an A/A pair
      SG_COLUMNS(SpeedPairRow, config_key, steps, pair_index, base_trial_id, cand_trial_id,
                 base_step_s, cand_step_s, log_ratio),
  };
  return map;
}

const RowMap<HostNoiseRow>& host_noise_map() {
  static const RowMap<HostNoiseRow> map{
      SG_COLUMNS(HostNoiseRow, campaign_id, steps, micro_batch, pairs, sd_log_ratio, mean_log_ratio,
                 detectable_speedup, resolution, min_effect, max_repeats)};
  return map;
}

const RowMap<RoundingBandRow>& rounding_band_map() {
  static const RowMap<RoundingBandRow> map{
      SG_COLUMNS(RoundingBandRow, campaign_id, steps, perturb_eps, seeds, curve_rms, eval_loss_abs,
                 grad_norm_log, seed_curve_rms),
      col("trial_ids_json", &RoundingBandRow::trial_ids),
  };
  return map;
}

// Inserts rows as evaluation_id's pairs (0: A/A pairs, stored NULL), under campaign_id
// when it is non-zero (else each row's own).
void insert_pairs(SQLite::Database& db, std::vector<SpeedPairRow> rows, std::int64_t campaign_id,
                  std::int64_t evaluation_id) {
  SQLite::Statement st(db, speed_pair_map().insert_sql("INSERT INTO speed_pairs"));
  for (auto& r : rows) {
    if (campaign_id) r.campaign_id = campaign_id;
    r.evaluation_id = evaluation_id;
    speed_pair_map().insert(st, r);
  }
}

}  // namespace

void Store::set_speed_pairs(std::int64_t evaluation_id, const std::vector<SpeedPairRow>& rows) {
  write([&] {
    exec(*db_, "DELETE FROM speed_pairs WHERE evaluation_id = ?", evaluation_id);
    insert_pairs(*db_, rows, 0, evaluation_id);
  });
}

void Store::add_noise_pairs(std::int64_t campaign_id, int steps,
                            const std::vector<SpeedPairRow>& rows) {
  write([&] {
    exec(*db_,
         "DELETE FROM speed_pairs WHERE campaign_id = ? AND evaluation_id IS NULL AND steps = ?",
         campaign_id, steps);
    insert_pairs(*db_, rows, campaign_id, 0);
  });
}

std::vector<SpeedPairRow> Store::speed_pairs(std::int64_t campaign_id, std::int64_t evaluation_id) {
  if (schema_version() < kSpeedSchema) return {};
  // evaluation_id 0: the A/A pairs (evaluation_id NULL).
  return speed_pair_map().select_all(
      *db_,
      "FROM speed_pairs WHERE campaign_id = ?1 AND CASE WHEN ?2 = 0 THEN evaluation_id IS NULL "
      "ELSE evaluation_id = ?2 END ORDER BY steps, pair_index",
      campaign_id, evaluation_id);
}

void Store::set_host_noise(const HostNoiseRow& r) {
  write([&] { host_noise_map().insert(*db_, "INSERT OR REPLACE INTO host_noise", r); });
}

std::vector<HostNoiseRow> Store::host_noise(std::int64_t campaign_id) {
  if (schema_version() < kSpeedSchema) return {};
  return host_noise_map().select_all(*db_, "FROM host_noise WHERE campaign_id = ? ORDER BY steps",
                                     campaign_id);
}

void Store::set_rounding_band(const RoundingBandRow& r) {
  write([&] { rounding_band_map().insert(*db_, "INSERT OR REPLACE INTO rounding_bands", r); });
}

std::vector<RoundingBandRow> Store::rounding_bands(std::int64_t campaign_id) {
  if (schema_version() < kSpeedSchema) return {};
  return rounding_band_map().select_all(
      *db_, "FROM rounding_bands WHERE campaign_id = ? ORDER BY steps", campaign_id);
}

}  // namespace sg::agent
