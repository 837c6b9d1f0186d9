#include "agent/cli/command.hpp"

#include <filesystem>
#include <iostream>

#include "agent/common/errors.hpp"
#include "agent/report/summary.hpp"

namespace sg::agent {

void add_db_option(CLI::App* app, std::string& db, const std::string& description) {
  app->add_option("--db", db, description)->capture_default_str();
}

void add_campaign_id_option(CLI::App* app, std::int64_t& campaign) {
  app->add_option("--campaign", campaign, "campaign id (default: the latest)");
}

void require_database(const std::string& db) {
  if (!std::filesystem::exists(db)) throw UsageError("database " + db + " does not exist");
}

std::optional<std::int64_t> chosen_campaign(std::int64_t campaign) {
  if (campaign > 0) return campaign;
  return std::nullopt;
}

void print_summary(const nlohmann::json& summary, bool as_json) {
  if (as_json)
    std::cout << summary.dump(2) << "\n";
  else
    std::cout << format_summary(summary);
}

}  // namespace sg::agent
