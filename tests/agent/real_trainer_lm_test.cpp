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

TEST(RealTrainerLm, TinyCampaignSearchesOnlyLmSwitches) {
  if (!fs::exists(test::real_trainer())) GTEST_SKIP() << test::real_trainer() << " not built";
  std::string dir = test::make_temp_dir("real_lm");
  auto r = test::run_speedgate(test::real_screen_args("lm", test::real_trainer(), 2, 8), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["campaign"]["deterministic"], true) << "CPU: the lm baseline must repeat bitwise";
  ASSERT_TRUE(j["baseline"].is_object());
  EXPECT_EQ(j["baseline"]["disposition"], "accepted");
  EXPECT_TRUE(fs::exists(dir + "/presets/fast.env"));
  const Manifest m = describe_trainer(test::real_trainer());
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
