// The presets table: what `presets emit` wrote, with the trials that justify it.
#include "agent/store/presets.hpp"

#include <fmt/format.h>

#include "agent/store/row_maps.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

const RowMap<PresetRow>& preset_map() {
  static const RowMap<PresetRow> map{
      col("campaign_id", &PresetRow::campaign_id),
      col("name", &PresetRow::name),
      col("path", &PresetRow::path),
      col("config_key", &PresetRow::config_key),
      col("fingerprint_hash", &PresetRow::fingerprint_hash),
      col("content", &PresetRow::content),
      col("budget_bytes", &PresetRow::budget_bytes),
      col("speedup", &PresetRow::speedup),
      col("speedup_spread", &PresetRow::speedup_spread),
      col("projected_peak_bytes", &PresetRow::projected_peak_bytes),
      col("evaluation_id", &PresetRow::evaluation_id),
      col("trial_ids_json", &PresetRow::trial_ids),
      col("created_at", &PresetRow::created_at),
  };
  return map;
}

std::int64_t Store::add_preset(const PresetRow& p) {
  std::int64_t id = 0;
  write([&] {
    SQLite::Statement st(*db_,
                         "INSERT INTO presets(campaign_id, name, budget_bytes, path, config_key, "
                         "evaluation_id, trial_ids_json, speedup, speedup_spread, "
                         "projected_peak_bytes, fingerprint_hash, content) "
                         "VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
    st.bind(1, p.campaign_id);
    st.bind(2, p.name);
    bind_real(st, 3, p.budget_bytes);
    st.bind(4, p.path);
    st.bind(5, p.config_key);
    bind_optional(st, 6, p.evaluation_id);
    st.bind(7, ids_json(p.trial_ids));
    bind_real(st, 8, p.speedup);
    bind_real(st, 9, p.speedup_spread);
    bind_real(st, 10, p.projected_peak_bytes);
    st.bind(11, p.fingerprint_hash);
    st.bind(12, p.content);
    st.exec();
    id = db_->getLastInsertRowid();
  });
  return id;
}

std::optional<PresetRow> Store::latest_preset(std::int64_t campaign_id, const std::string& name) {
  SQLite::Statement q(*db_, fmt::format("SELECT {} FROM presets WHERE campaign_id = ? AND "
                                        "name = ? ORDER BY id DESC LIMIT 1",
                                        preset_map().select_list()));
  q.bind(1, campaign_id);
  q.bind(2, name);
  if (!q.executeStep()) return std::nullopt;
  return preset_map().read(q);
}

std::vector<PresetRow> Store::presets(std::int64_t campaign_id) {
  SQLite::Statement q(*db_, fmt::format("SELECT {} FROM presets WHERE campaign_id = ? "
                                        "ORDER BY id",
                                        preset_map().select_list()));
  q.bind(1, campaign_id);
  return preset_map().read_all(q);
}

}  // namespace sg::agent
