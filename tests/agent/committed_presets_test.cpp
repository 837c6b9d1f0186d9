// presets/ is what `speedgate presets emit` wrote from the committed H200 campaign DB
// (benchmarks/results/h200-campaign.db, campaign 1), not edited by hand: emitting again
// from a copy of that DB reproduces every preset's switches and the trials that justify
// them. (The committed files keep the header and README layout of the speedgate that
// wrote them; the layout is not compared.)
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "agent/presets/emit.hpp"
#include "agent/report/summary.hpp"
#include "agent/store/store.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

// A preset's switch lines and its "# trial ids:" line.
std::string switches_and_trials(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# ", 0) == 0 && line.rfind("# trial ids:", 0) != 0) continue;
    out << line << "\n";
  }
  return out.str();
}

TEST(CommittedPresets, ReEmittingFromTheCampaignDbReproducesThem) {
  const fs::path root(SPEEDGATE_SOURCE_DIR);
  const fs::path db = root / "benchmarks/results/h200-campaign.db";
  ASSERT_TRUE(fs::exists(db));
  const std::string dir = test::make_temp_dir("committed_presets");
  fs::copy_file(db, fs::path(dir) / "campaign.db");
  {
    Store store(dir + "/campaign.db");
    const EmitResult r = emit_presets(store, 1, dir + "/presets");
    EXPECT_TRUE(r.all_budgets_met);
  }
  for (const char* name : {"fast.env", "fast_80gb.env"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(fs::exists(root / "presets" / name));
    EXPECT_EQ(switches_and_trials(root / "presets" / name),
              switches_and_trials(fs::path(dir) / "presets" / name));
  }
  EXPECT_TRUE(fs::exists(root / "presets/README.md"));
  fs::remove_all(dir);
}

// `speedgate report` opens a database read-only, which does not migrate it: every committed
// campaign DB, whatever its schema version, still reports (an older one has no finals).
TEST(CommittedPresets, EveryCommittedDbReportsReadOnlyWithoutMigrating) {
  const fs::path results = fs::path(SPEEDGATE_SOURCE_DIR) / "benchmarks/results";
  const std::string dir = test::make_temp_dir("committed_dbs");
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(results)) {
    if (entry.path().extension() != ".db") continue;
    SCOPED_TRACE(entry.path().filename().string());
    const fs::path copy = fs::path(dir) / entry.path().filename();
    fs::copy_file(entry.path(), copy);
    int version = 0;
    {
      Store store(copy.string(), /*read_only=*/true);
      version = store.schema_version();
      nlohmann::json s;
      ASSERT_NO_THROW(s = campaign_summary(store, std::nullopt));
      EXPECT_TRUE(s.at("finals").is_array());
      if (version < 5) EXPECT_TRUE(s.at("finals").empty());
    }
    Store again(copy.string(), /*read_only=*/true);
    EXPECT_EQ(again.schema_version(), version);
    ++seen;
  }
  EXPECT_GE(seen, 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sg::agent
