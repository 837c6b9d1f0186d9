// The presets table: what `presets emit` wrote, with the trials that justify it.
#include "agent/store/presets.hpp"

#include "agent/store/row_maps.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

const RowMap<PresetRow>& preset_map() {
  static const RowMap<PresetRow> map{
      SG_COLUMNS(PresetRow, campaign_id, name, path, config_key, fingerprint_hash, content,
                 budget_bytes, speedup, speedup_spread, projected_peak_bytes, evaluation_id),
      col("trial_ids_json", &PresetRow::trial_ids),
      read_only(col("created_at", &PresetRow::created_at)),
  };
  return map;
}

std::int64_t Store::add_preset(const PresetRow& p) {
  std::int64_t id = 0;
  write([&] {
    preset_map().insert(*db_, "INSERT INTO presets", p);
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
