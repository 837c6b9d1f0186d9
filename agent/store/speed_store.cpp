// The store's speed evidence (schema v6): every ABAB pair behind a verdict, the host's
// A/A noise and the rounding band per step budget. Reads of an older database opened
// read-only return nothing.
#include <nlohmann/json.hpp>

#include "agent/store/store.hpp"

namespace sg::agent {

namespace {

constexpr int kSpeedSchema = 6;

// The rows of `q`, each filled from the current step by `fill(row)`.
template <class Row, class Fill>
std::vector<Row> read_rows(SQLite::Statement& q, Fill fill) {
  std::vector<Row> out;
  while (q.executeStep()) {
    Row r;
    fill(r);
    out.push_back(std::move(r));
  }
  return out;
}

void insert_pair(SQLite::Statement& st, const SpeedPairRow& r, std::int64_t campaign_id,
                 std::int64_t evaluation_id) {
  st.reset();
  st.bind(1, campaign_id);
  if (evaluation_id) st.bind(2, evaluation_id);
  else st.bind(2);
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
    "INSERT INTO speed_pairs(campaign_id, evaluation_id, config_key, steps, pair_index, base_trial_id, "
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

void Store::add_noise_pairs(std::int64_t campaign_id, int steps, const std::vector<SpeedPairRow>& rows) {
  write([&] {
    SQLite::Statement clear(*db_,
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
  SQLite::Statement q(*db_, std::string("SELECT campaign_id, evaluation_id, config_key, steps, pair_index, "
                                        "base_trial_id, cand_trial_id, base_step_s, cand_step_s, log_ratio "
                                        "FROM speed_pairs WHERE campaign_id = ? AND ") +
                                (evaluation_id ? "evaluation_id = ?" : "evaluation_id IS NULL") +
                                " ORDER BY steps, pair_index");
  q.bind(1, campaign_id);
  if (evaluation_id) q.bind(2, evaluation_id);
  return read_rows<SpeedPairRow>(q, [&](SpeedPairRow& r) {
    r.campaign_id = q.getColumn(0).getInt64();
    r.evaluation_id = q.getColumn(1).isNull() ? 0 : q.getColumn(1).getInt64();
    r.config_key = q.getColumn(2).getString();
    r.steps = q.getColumn(3).getInt();
    r.pair_index = q.getColumn(4).getInt();
    r.base_trial_id = q.getColumn(5).getInt64();
    r.cand_trial_id = q.getColumn(6).getInt64();
    r.base_step_s = column_real(q.getColumn(7));
    r.cand_step_s = column_real(q.getColumn(8));
    r.log_ratio = column_real(q.getColumn(9));
  });
}

void Store::set_host_noise(const HostNoiseRow& r) {
  write([&] {
    SQLite::Statement st(*db_,
        "INSERT OR REPLACE INTO host_noise(campaign_id, steps, micro_batch, pairs, sd_log_ratio, mean_log_ratio, "
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
  SQLite::Statement q(*db_,
      "SELECT campaign_id, steps, micro_batch, pairs, sd_log_ratio, mean_log_ratio, detectable_speedup, "
      "resolution, min_effect, max_repeats FROM host_noise WHERE campaign_id = ? ORDER BY steps");
  q.bind(1, campaign_id);
  return read_rows<HostNoiseRow>(q, [&](HostNoiseRow& r) {
    r.campaign_id = q.getColumn(0).getInt64();
    r.steps = q.getColumn(1).getInt();
    r.micro_batch = q.getColumn(2).getInt();
    r.pairs = q.getColumn(3).getInt();
    r.sd_log_ratio = column_real(q.getColumn(4));
    r.mean_log_ratio = column_real(q.getColumn(5));
    r.detectable_speedup = column_real(q.getColumn(6));
    r.resolution = column_real(q.getColumn(7));
    r.min_effect = column_real(q.getColumn(8));
    r.max_repeats = q.getColumn(9).getInt();
  });
}

void Store::set_rounding_band(const RoundingBandRow& r) {
  write([&] {
    SQLite::Statement st(*db_,
        "INSERT OR REPLACE INTO rounding_bands(campaign_id, steps, perturb_eps, seeds, curve_rms, eval_loss_abs, "
        "grad_norm_log, seed_curve_rms, trial_ids_json) VALUES (?,?,?,?,?,?,?,?,?)");
    st.bind(1, r.campaign_id);
    st.bind(2, r.steps);
    bind_real(st, 3, r.perturb_eps);
    st.bind(4, r.seeds);
    bind_real(st, 5, r.curve_rms);
    bind_real(st, 6, r.eval_loss_abs);
    bind_real(st, 7, r.grad_norm_log);
    bind_real(st, 8, r.seed_curve_rms);
    st.bind(9, nlohmann::json(r.trial_ids).dump());
    st.exec();
  });
}

std::vector<RoundingBandRow> Store::rounding_bands(std::int64_t campaign_id) {
  if (schema_version() < kSpeedSchema) return {};
  SQLite::Statement q(*db_,
      "SELECT campaign_id, steps, perturb_eps, seeds, curve_rms, eval_loss_abs, grad_norm_log, seed_curve_rms, "
      "trial_ids_json FROM rounding_bands WHERE campaign_id = ? ORDER BY steps");
  q.bind(1, campaign_id);
  return read_rows<RoundingBandRow>(q, [&](RoundingBandRow& r) {
    r.campaign_id = q.getColumn(0).getInt64();
    r.steps = q.getColumn(1).getInt();
    r.perturb_eps = column_real(q.getColumn(2));
    r.seeds = q.getColumn(3).getInt();
    r.curve_rms = column_real(q.getColumn(4));
    r.eval_loss_abs = column_real(q.getColumn(5));
    r.grad_norm_log = column_real(q.getColumn(6));
    r.seed_curve_rms = column_real(q.getColumn(7));
    nlohmann::json ids = nlohmann::json::parse(q.getColumn(8).getString(), nullptr, false);
    if (ids.is_array()) {
      for (const auto& v : ids) {
        if (v.is_number_integer()) r.trial_ids.push_back(v.get<std::int64_t>());
      }
    }
  });
}

}  // namespace sg::agent
