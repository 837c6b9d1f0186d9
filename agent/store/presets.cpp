// The presets table: what `presets emit` wrote, with the trials that justify it.
#include "agent/store/presets.hpp"

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
    exec(*db_,
         "INSERT INTO presets(campaign_id, name, budget_bytes, path, config_key, evaluation_id, "
         "trial_ids_json, speedup, speedup_spread, projected_peak_bytes, fingerprint_hash, "
         "content) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
         p.campaign_id, p.name, p.budget_bytes, p.path, p.config_key, p.evaluation_id,
         ids_json(p.trial_ids), p.speedup, p.speedup_spread, p.projected_peak_bytes,
         p.fingerprint_hash, p.content);
    id = db_->getLastInsertRowid();
  });
  return id;
}

std::optional<PresetRow> Store::latest_preset(std::int64_t campaign_id, const std::string& name) {
  return preset_map().select_one(
      *db_, "FROM presets WHERE campaign_id = ? AND name = ? ORDER BY id DESC LIMIT 1", campaign_id,
      name);
}

std::vector<PresetRow> Store::presets(std::int64_t campaign_id) {
  return preset_map().select_all(*db_, "FROM presets WHERE campaign_id = ? ORDER BY id",
                                 campaign_id);
}

}  // namespace sg::agent
