// The environments and campaigns tables.
#include "agent/store/campaigns.hpp"

#include "agent/store/row_mapper.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

const RowMap<CampaignRow>& campaign_map() {
  static const RowMap<CampaignRow> map{
      SG_COLUMNS(CampaignRow, id, created_at, finished_at, state, workload, size, trainer),
      col("manifest_json", &CampaignRow::manifest),
      col("options_json", &CampaignRow::options),
      SG_COLUMNS(CampaignRow, environment_id, deterministic, note),
  };
  return map;
}

const RowMap<EnvironmentRow>& environment_map() {
  static const RowMap<EnvironmentRow> map{
      col("id", &EnvironmentRow::id),
      col("fingerprint_hash", &EnvironmentRow::hash),
      col("fingerprint_json", &EnvironmentRow::fingerprint),
  };
  return map;
}

}  // namespace

std::int64_t Store::upsert_environment(const std::string& hash, const nlohmann::json& fingerprint) {
  std::int64_t id = 0;
  write([&] {
    exec(*db_,
         "INSERT OR IGNORE INTO environments(fingerprint_hash, fingerprint_json) VALUES(?, ?)",
         hash, fingerprint.dump());
    id =
        query_one(*db_, "SELECT id FROM environments WHERE fingerprint_hash = ?", first_int64, hash)
            .value();
  });
  return id;
}

std::optional<std::string> Store::environment_hash(std::int64_t id) {
  return query_one(*db_, "SELECT fingerprint_hash FROM environments WHERE id = ?", first_text, id);
}

std::optional<EnvironmentRow> Store::environment(std::int64_t id) {
  return environment_map().select_one(*db_, "FROM environments WHERE id = ?", id);
}

std::int64_t Store::create_campaign(const CampaignRow& c) {
  std::int64_t id = 0;
  write([&] {
    exec(*db_,
         "INSERT INTO campaigns(state, workload, size, trainer, manifest_json, options_json, note) "
         "VALUES('running', ?, ?, ?, ?, ?, ?)",
         c.workload, c.size, c.trainer, c.manifest.dump(), c.options.dump(), c.note);
    id = db_->getLastInsertRowid();
  });
  return id;
}

std::optional<CampaignRow> Store::campaign(std::int64_t id) {
  return campaign_map().select_one(*db_, "FROM campaigns WHERE id = ?", id);
}

std::optional<CampaignRow> Store::latest_campaign(bool unfinished_only, const std::string& workload,
                                                  const std::string& size) {
  // An empty workload or size matches every campaign.
  return campaign_map().select_one(*db_,
                                   std::string("FROM campaigns WHERE ") +
                                       (unfinished_only ? "state = 'running' AND " : "") +
                                       "(?1 = '' OR workload = ?1) AND (?2 = '' OR size = ?2) "
                                       "ORDER BY id DESC LIMIT 1",
                                   workload, size);
}

void Store::set_campaign_environment(std::int64_t id, std::int64_t env_id) {
  write_exec(*this, "UPDATE campaigns SET environment_id = ? WHERE id = ?", env_id, id);
}

void Store::set_campaign_determinism(std::int64_t id, bool deterministic, const std::string& note) {
  write_exec(*this, "UPDATE campaigns SET deterministic = ?, note = ? WHERE id = ?", deterministic,
             note, id);
}

void Store::finish_campaign(std::int64_t id) {
  write_exec(
      *this,
      "UPDATE campaigns SET state = 'finished', finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', "
      "'now') WHERE id = ?",
      id);
}

void Store::reopen_campaign(std::int64_t id) {
  write_exec(*this, "UPDATE campaigns SET state = 'running', finished_at = NULL WHERE id = ?", id);
}

}  // namespace sg::agent
