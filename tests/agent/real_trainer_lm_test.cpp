// End-to-end: a small campaign on the real speedgate-train's lm workload (tiny, CPU):
// the baseline repeats bitwise, only switches that apply to lm are tried, and presets
// are emitted. Skipped when the trainer was not built.
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "agent/protocol/config.hpp"
#include "agent/runner/describe.hpp"
#include "agent/store/store.hpp"
#include "store_sql.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

std::string lm_trainer() {
  if (const char* t = std::getenv("SPEEDGATE_TEST_TRAINER")) return t;
  return std::string(SPEEDGATE_BIN_DIR) + "/speedgate-train";
}

TEST(RealTrainerLm, TinyCampaignSearchesOnlyLmSwitches) {
  if (!fs::exists(lm_trainer())) GTEST_SKIP() << lm_trainer() << " not built";
  std::string dir = test::make_temp_dir("real_lm");
  auto r = test::run_speedgate({"tune",
                                "--workload",
                                "lm",
                                "--size",
                                "tiny",
                                "--db",
                                "results/sg.db",
                                "--trainer",
                                lm_trainer(),
                                "--steps",
                                "2",
                                "--screen-steps",
                                "1",
                                "--seeds",
                                "0,1000",
                                "--repeats",
                                "2",
                                "--max-repeats",
                                "2",
                                "--noise-pairs",
                                "0",
                                "--perturb-eps",
                                "0",
                                "--plan",
                                "screen",
                                "--budget-trials",
                                "8",
                                "--target-micro-batch",
                                "2",
                                "--presets-out",
                                "presets",
                                "--json"},
                               dir);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["campaign"]["deterministic"], true) << "CPU: the lm baseline must repeat bitwise";
  ASSERT_TRUE(j["baseline"].is_object());
  EXPECT_EQ(j["baseline"]["disposition"], "accepted");
  EXPECT_TRUE(fs::exists(dir + "/presets/fast.env"));
  const Manifest m = describe_trainer(lm_trainer());
  Store s(dir + "/results/sg.db", /*read_only=*/true);
  auto camp = s.latest_campaign(/*unfinished_only=*/false, "lm", "tiny");
  ASSERT_TRUE(camp.has_value());
  int tried = 0;
  SQLite::Statement q(raw_db(s), "SELECT DISTINCT config_key FROM trials WHERE campaign_id = ?");
  q.bind(1, camp->id);
  while (q.executeStep()) {
    for (const auto& [name, value] : config_from_key(q.getColumn(0).getString())) {
      const SwitchSpec* spec = m.find_switch(name);
      ASSERT_NE(spec, nullptr) << name;
      EXPECT_TRUE(spec->applies_to("lm")) << name << " is not an lm switch";
      ++tried;
    }
  }
  EXPECT_GT(tried, 0)
      << "the screen tried no switch (CPU: PAD_TO_8 and CKPT_LAYERS are the lm candidates)";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sg::agent
