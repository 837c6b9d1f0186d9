// The environments and campaigns tables.
#include "agent/store/campaigns.hpp"

#include <fmt/format.h>

#include "agent/store/connection.hpp"
#include "agent/store/row_mapper.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

const RowMap<CampaignRow>& campaign_map() {
  static const RowMap<CampaignRow> map{
      col("id", &CampaignRow::id),
      col("created_at", &CampaignRow::created_at),
      col("finished_at", &CampaignRow::finished_at),
      col("state", &CampaignRow::state),
      col("workload", &CampaignRow::workload),
      col("size", &CampaignRow::size),
      col("trainer", &CampaignRow::trainer),
      col("manifest_json", &CampaignRow::manifest),
      col("options_json", &CampaignRow::options),
      col("environment_id", &CampaignRow::environment_id),
      col("deterministic", &CampaignRow::deterministic),
      col("note", &CampaignRow::note),
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

// Runs one UPDATE of a campaign row inside a write transaction; `bind` binds the
// statement's parameters before the trailing `WHERE id = ?`, which gets `id`.
void update_campaign(Store& store, const std::string& set, std::int64_t id,
                     const std::function<int(SQLite::Statement&)>& bind) {
  store.write([&] {
    SQLite::Statement st(store_detail::connection(store),
                         "UPDATE campaigns SET " + set + " WHERE id = ?");
    const int next = bind(st);
    st.bind(next, id);
    st.exec();
  });
}

}  // namespace

std::int64_t Store::upsert_environment(const std::string& hash, const nlohmann::json& fingerprint) {
  std::int64_t id = 0;
  write([&] {
    SQLite::Statement ins(*db_,
                          "INSERT OR IGNORE INTO environments(fingerprint_hash, fingerprint_json) "
                          "VALUES(?, ?)");
    ins.bind(1, hash);
    ins.bind(2, fingerprint.dump());
    ins.exec();
    SQLite::Statement q(*db_, "SELECT id FROM environments WHERE fingerprint_hash = ?");
    q.bind(1, hash);
    q.executeStep();
    id = q.getColumn(0).getInt64();
  });
  return id;
}

std::optional<std::string> Store::environment_hash(std::int64_t id) {
  SQLite::Statement q(*db_, "SELECT fingerprint_hash FROM environments WHERE id = ?");
  q.bind(1, id);
  if (!q.executeStep()) return std::nullopt;
  return q.getColumn(0).getString();
}

std::optional<EnvironmentRow> Store::environment(std::int64_t id) {
  SQLite::Statement q(*db_, fmt::format("SELECT {} FROM environments WHERE id = ?",
                                        environment_map().select_list()));
  q.bind(1, id);
  if (!q.executeStep()) return std::nullopt;
  return environment_map().read(q);
}

std::int64_t Store::create_campaign(const CampaignRow& c) {
  std::int64_t id = 0;
  write([&] {
    SQLite::Statement st(*db_,
                         "INSERT INTO campaigns(state, workload, size, trainer, manifest_json, "
                         "options_json, note) VALUES('running', ?, ?, ?, ?, ?, ?)");
    st.bind(1, c.workload);
    st.bind(2, c.size);
    st.bind(3, c.trainer);
    st.bind(4, c.manifest.dump());
    st.bind(5, c.options.dump());
    st.bind(6, c.note);
    st.exec();
    id = db_->getLastInsertRowid();
  });
  return id;
}

std::optional<CampaignRow> Store::campaign(std::int64_t id) {
  SQLite::Statement q(
      *db_, fmt::format("SELECT {} FROM campaigns WHERE id = ?", campaign_map().select_list()));
  q.bind(1, id);
  if (!q.executeStep()) return std::nullopt;
  return campaign_map().read(q);
}

std::optional<CampaignRow> Store::latest_campaign(bool unfinished_only, const std::string& workload,
                                                  const std::string& size) {
  std::string sql = fmt::format("SELECT {} FROM campaigns WHERE 1=1", campaign_map().select_list());
  if (unfinished_only) sql += " AND state = 'running'";
  if (!workload.empty()) sql += " AND workload = :w";
  if (!size.empty()) sql += " AND size = :s";
  sql += " ORDER BY id DESC LIMIT 1";
  SQLite::Statement q(*db_, sql);
  if (!workload.empty()) q.bind(":w", workload);
  if (!size.empty()) q.bind(":s", size);
  if (!q.executeStep()) return std::nullopt;
  return campaign_map().read(q);
}

void Store::set_campaign_environment(std::int64_t id, std::int64_t env_id) {
  update_campaign(*this, "environment_id = ?", id, [&](SQLite::Statement& st) {
    st.bind(1, env_id);
    return 2;
  });
}

void Store::set_campaign_determinism(std::int64_t id, bool deterministic, const std::string& note) {
  update_campaign(*this, "deterministic = ?, note = ?", id, [&](SQLite::Statement& st) {
    st.bind(1, deterministic ? 1 : 0);
    st.bind(2, note);
    return 3;
  });
}

void Store::finish_campaign(std::int64_t id) {
  update_campaign(*this, "state = 'finished', finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')",
                  id, [](SQLite::Statement&) { return 1; });
}

void Store::reopen_campaign(std::int64_t id) {
  update_campaign(*this, "state = 'running', finished_at = NULL", id,
                  [](SQLite::Statement&) { return 1; });
}

}  // namespace sg::agent
