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
      col("evaluation_id", &SpeedPairRow::evaluation_id),  // NULL (A/A pairs) reads 0
      col("config_key", &SpeedPairRow::config_key),
      col("steps", &SpeedPairRow::steps),
      col("pair_index", &SpeedPairRow::pair_index),
      col("base_trial_id", &SpeedPairRow::base_trial_id),
      col("cand_trial_id", &SpeedPairRow::cand_trial_id),
      col("base_step_s", &SpeedPairRow::base_step_s),
      col("cand_step_s", &SpeedPairRow::cand_step_s),
      col("log_ratio", &SpeedPairRow::log_ratio),
  };
  return map;
}

const RowMap<HostNoiseRow>& host_noise_map() {
  static const RowMap<HostNoiseRow> map{
      col("campaign_id", &HostNoiseRow::campaign_id),
      col("steps", &HostNoiseRow::steps),
      col("micro_batch", &HostNoiseRow::micro_batch),
      col("pairs", &HostNoiseRow::pairs),
      col("sd_log_ratio", &HostNoiseRow::sd_log_ratio),
      col("mean_log_ratio", &HostNoiseRow::mean_log_ratio),
      col("detectable_speedup", &HostNoiseRow::detectable_speedup),
      col("resolution", &HostNoiseRow::resolution),
      col("min_effect", &HostNoiseRow::min_effect),
      col("max_repeats", &HostNoiseRow::max_repeats),
  };
  return map;
}

const RowMap<RoundingBandRow>& rounding_band_map() {
  static const RowMap<RoundingBandRow> map{
      col("campaign_id", &RoundingBandRow::campaign_id),
      col("steps", &RoundingBandRow::steps),
      col("perturb_eps", &RoundingBandRow::perturb_eps),
      col("seeds", &RoundingBandRow::seeds),
      col("curve_rms", &RoundingBandRow::curve_rms),
      col("eval_loss_abs", &RoundingBandRow::eval_loss_abs),
      col("grad_norm_log", &RoundingBandRow::grad_norm_log),
      col("seed_curve_rms", &RoundingBandRow::seed_curve_rms),
      col("trial_ids_json", &RoundingBandRow::trial_ids),
  };
  return map;
}

constexpr const char* kInsertPair =
    "INSERT INTO speed_pairs(campaign_id, evaluation_id, config_key, steps, pair_index, "
    "base_trial_id, cand_trial_id, base_step_s, cand_step_s, log_ratio) "
    "VALUES (?,?,?,?,?,?,?,?,?,?)";

// One row through prepared kInsertPair; evaluation_id 0 binds NULL (an A/A pair).
void insert_pair(SQLite::Statement& st, const SpeedPairRow& r, std::int64_t campaign_id,
                 std::int64_t evaluation_id) {
  exec_again(st, campaign_id,
             evaluation_id ? std::optional<std::int64_t>(evaluation_id) : std::nullopt,
             r.config_key, r.steps, r.pair_index, r.base_trial_id, r.cand_trial_id, r.base_step_s,
             r.cand_step_s, r.log_ratio);
}

}  // namespace

void Store::set_speed_pairs(std::int64_t evaluation_id, const std::vector<SpeedPairRow>& rows) {
  write([&] {
    exec(*db_, "DELETE FROM speed_pairs WHERE evaluation_id = ?", evaluation_id);
    SQLite::Statement st(*db_, kInsertPair);
    for (const auto& r : rows) insert_pair(st, r, r.campaign_id, evaluation_id);
  });
}

void Store::add_noise_pairs(std::int64_t campaign_id, int steps,
                            const std::vector<SpeedPairRow>& rows) {
  write([&] {
    exec(*db_,
         "DELETE FROM speed_pairs WHERE campaign_id = ? AND evaluation_id IS NULL AND steps = ?",
         campaign_id, steps);
    SQLite::Statement st(*db_, kInsertPair);
    for (const auto& r : rows) insert_pair(st, r, campaign_id, 0);
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
  write_exec(*this,
             "INSERT OR REPLACE INTO host_noise(campaign_id, steps, micro_batch, pairs, "
             "sd_log_ratio, mean_log_ratio, detectable_speedup, resolution, min_effect, "
             "max_repeats) VALUES (?,?,?,?,?,?,?,?,?,?)",
             r.campaign_id, r.steps, r.micro_batch, r.pairs, r.sd_log_ratio, r.mean_log_ratio,
             r.detectable_speedup, r.resolution, r.min_effect, r.max_repeats);
}

std::vector<HostNoiseRow> Store::host_noise(std::int64_t campaign_id) {
  if (schema_version() < kSpeedSchema) return {};
  return host_noise_map().select_all(*db_, "FROM host_noise WHERE campaign_id = ? ORDER BY steps",
                                     campaign_id);
}

void Store::set_rounding_band(const RoundingBandRow& r) {
  write_exec(*this,
             "INSERT OR REPLACE INTO rounding_bands(campaign_id, steps, perturb_eps, seeds, "
             "curve_rms, eval_loss_abs, grad_norm_log, seed_curve_rms, trial_ids_json) "
             "VALUES (?,?,?,?,?,?,?,?,?)",
             r.campaign_id, r.steps, r.perturb_eps, r.seeds, r.curve_rms, r.eval_loss_abs,
             r.grad_norm_log, r.seed_curve_rms, ids_json(r.trial_ids));
}

std::vector<RoundingBandRow> Store::rounding_bands(std::int64_t campaign_id) {
  if (schema_version() < kSpeedSchema) return {};
  return rounding_band_map().select_all(
      *db_, "FROM rounding_bands WHERE campaign_id = ? ORDER BY steps", campaign_id);
}

}  // namespace sg::agent
