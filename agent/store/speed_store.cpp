// The store's speed evidence (schema v6): every ABAB pair behind a verdict, the host's
// A/A noise and the rounding band per step budget. Reads of an older database opened
// read-only return nothing.
#include <fmt/format.h>

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

void insert_pair(SQLite::Statement& st, const SpeedPairRow& r, std::int64_t campaign_id,
                 std::int64_t evaluation_id) {
  st.reset();
  st.bind(1, campaign_id);
  if (evaluation_id) {
    st.bind(2, evaluation_id);
  } else {
    st.bind(2);
  }
  st.bind(3, r.config_key);
  st.bind(4, r.steps);
  st.bind(5, r.pair_index);
  st.bind(6, r.base_trial_id);
  st.bind(7, r.cand_trial_id);
  bind_real(st, 8, r.base_step_s);
  bind_real(st, 9, r.cand_step_s);
  bind_real(st, 10, r.log_ratio);
  st.exec();
}

constexpr const char* kInsertPair =
    "INSERT INTO speed_pairs(campaign_id, evaluation_id, config_key, steps, pair_index, "
    "base_trial_id, "
    "cand_trial_id, base_step_s, cand_step_s, log_ratio) VALUES (?,?,?,?,?,?,?,?,?,?)";

}  // namespace

void Store::set_speed_pairs(std::int64_t evaluation_id, const std::vector<SpeedPairRow>& rows) {
  write([&] {
    SQLite::Statement clear(*db_, "DELETE FROM speed_pairs WHERE evaluation_id = ?");
    clear.bind(1, evaluation_id);
    clear.exec();
    SQLite::Statement st(*db_, kInsertPair);
    for (const auto& r : rows) insert_pair(st, r, r.campaign_id, evaluation_id);
  });
}

void Store::add_noise_pairs(std::int64_t campaign_id, int steps,
                            const std::vector<SpeedPairRow>& rows) {
  write([&] {
    SQLite::Statement clear(
        *db_,
        "DELETE FROM speed_pairs WHERE campaign_id = ? AND evaluation_id IS NULL AND steps = ?");
    clear.bind(1, campaign_id);
    clear.bind(2, steps);
    clear.exec();
    SQLite::Statement st(*db_, kInsertPair);
    for (const auto& r : rows) insert_pair(st, r, campaign_id, 0);
  });
}

std::vector<SpeedPairRow> Store::speed_pairs(std::int64_t campaign_id, std::int64_t evaluation_id) {
  if (schema_version() < kSpeedSchema) return {};
  SQLite::Statement q(*db_,
                      fmt::format("SELECT {} FROM speed_pairs WHERE campaign_id = ? AND {} "
                                  "ORDER BY steps, pair_index",
                                  speed_pair_map().select_list(),
                                  evaluation_id ? "evaluation_id = ?" : "evaluation_id IS NULL"));
  q.bind(1, campaign_id);
  if (evaluation_id) q.bind(2, evaluation_id);
  return speed_pair_map().read_all(q);
}

void Store::set_host_noise(const HostNoiseRow& r) {
  write([&] {
    SQLite::Statement st(
        *db_,
        "INSERT OR REPLACE INTO host_noise(campaign_id, steps, micro_batch, pairs, sd_log_ratio, "
        "mean_log_ratio, "
        "detectable_speedup, resolution, min_effect, max_repeats) VALUES (?,?,?,?,?,?,?,?,?,?)");
    st.bind(1, r.campaign_id);
    st.bind(2, r.steps);
    st.bind(3, r.micro_batch);
    st.bind(4, r.pairs);
    bind_real(st, 5, r.sd_log_ratio);
    bind_real(st, 6, r.mean_log_ratio);
    bind_real(st, 7, r.detectable_speedup);
    bind_real(st, 8, r.resolution);
    bind_real(st, 9, r.min_effect);
    st.bind(10, r.max_repeats);
    st.exec();
  });
}

std::vector<HostNoiseRow> Store::host_noise(std::int64_t campaign_id) {
  if (schema_version() < kSpeedSchema) return {};
  SQLite::Statement q(*db_, fmt::format("SELECT {} FROM host_noise WHERE campaign_id = ? "
                                        "ORDER BY steps",
                                        host_noise_map().select_list()));
  q.bind(1, campaign_id);
  return host_noise_map().read_all(q);
}

void Store::set_rounding_band(const RoundingBandRow& r) {
  write([&] {
    SQLite::Statement st(
        *db_,
        "INSERT OR REPLACE INTO rounding_bands(campaign_id, steps, perturb_eps, seeds, curve_rms, "
        "eval_loss_abs, "
        "grad_norm_log, seed_curve_rms, trial_ids_json) VALUES (?,?,?,?,?,?,?,?,?)");
    st.bind(1, r.campaign_id);
    st.bind(2, r.steps);
    bind_real(st, 3, r.perturb_eps);
    st.bind(4, r.seeds);
    bind_real(st, 5, r.curve_rms);
    bind_real(st, 6, r.eval_loss_abs);
    bind_real(st, 7, r.grad_norm_log);
    bind_real(st, 8, r.seed_curve_rms);
    st.bind(9, ids_json(r.trial_ids));
    st.exec();
  });
}

std::vector<RoundingBandRow> Store::rounding_bands(std::int64_t campaign_id) {
  if (schema_version() < kSpeedSchema) return {};
  SQLite::Statement q(*db_, fmt::format("SELECT {} FROM rounding_bands WHERE campaign_id = ? "
                                        "ORDER BY steps",
                                        rounding_band_map().select_list()));
  q.bind(1, campaign_id);
  return rounding_band_map().read_all(q);
}

}  // namespace sg::agent
