// What the store tests share: a campaign row to create, and a fresh DB in a temp dir of
// its own.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/store/store.hpp"
#include "test_util.hpp"

namespace sg::agent::test {

// A wam/tiny campaign of `trainer` with an empty manifest and empty options.
inline CampaignRow campaign_row(const std::string& trainer = "/bin/true") {
  CampaignRow c;
  c.workload = "wam";
  c.size = "tiny";
  c.trainer = trainer;
  c.manifest = nlohmann::json::object();
  c.options = nlohmann::json::object();
  return c;
}

inline std::int64_t make_campaign(Store& s) { return s.create_campaign(campaign_row()); }

// `db`: the path of a DB not yet created, in `dir`, which is removed after the test.
struct TempDbTest : TempDirTest {
  std::string db = dir + "/sg.db";
};

}  // namespace sg::agent::test
