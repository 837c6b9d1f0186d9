// `speedgate presets project` on the committed H200 campaign DB: re-projecting a preset
// at the campaign's own target reproduces the stored projection, another world size /
// ZeRO stage changes only the sharded terms, and bad requests exit 2.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/store/store.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

// dir holds c.db, a copy of the committed H200 campaign DB.
struct PresetsProject : test::TempDirTest {
  void SetUp() override {
    fs::copy_file(fs::path(SPEEDGATE_SOURCE_DIR) / "benchmarks/results/h200-campaign.db",
                  fs::path(dir) / "c.db");
  }
  nlohmann::json project(std::vector<std::string> extra) {
    std::vector<std::string> args = {"presets",    "project", "--db",  "c.db",
                                     "--campaign", "1",       "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = test::run_speedgate(args, dir);
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }
};

TEST_F(PresetsProject, AtTheCampaignTargetItReproducesTheStoredProjection) {
  Store store(dir + "/c.db", /*read_only=*/true);
  for (const char* name : {"fast", "fast_80gb"}) {
    auto preset = store.latest_preset(1, name);
    ASSERT_TRUE(preset) << name;
    const auto j = project({"--preset", name});
    EXPECT_EQ(j.at("config_key"), preset->config_key);
    EXPECT_EQ(j.at("target_micro_batch"), 32);
    EXPECT_EQ(j.at("world_size"), 8);
    EXPECT_EQ(j.at("zero_stage"), 2);
    EXPECT_DOUBLE_EQ(j.at("peak_bytes").get<double>(), preset->projected_peak_bytes) << name;
  }
}

TEST_F(PresetsProject, WorldSizeAndZeroStageChangeOnlyTheShardedTerms) {
  const auto w8 = project({"--preset", "fast"});
  const auto w1 = project({"--preset", "fast", "--world-size", "1", "--zero-stage", "0"});
  const auto& t8 = w8.at("terms");
  const auto& t1 = w1.at("terms");
  EXPECT_DOUBLE_EQ(t8.at("grads").get<double>() * 8, t1.at("grads").get<double>());
  EXPECT_DOUBLE_EQ(t8.at("optimizer").get<double>() * 8, t1.at("optimizer").get<double>());
  EXPECT_DOUBLE_EQ(t8.at("params").get<double>(), t1.at("params").get<double>());
  EXPECT_DOUBLE_EQ(t8.at("activations").get<double>(), t1.at("activations").get<double>());
  EXPECT_EQ(t1.at("comm").get<double>(), 0.0);  // one GPU: no all-reduce buckets
  EXPECT_GT(w1.at("peak_bytes").get<double>(), w8.at("peak_bytes").get<double>());
  // Half the micro-batch halves the activation term and nothing else.
  const auto half = project({"--preset", "fast", "--micro-batch", "16"});
  EXPECT_DOUBLE_EQ(half.at("terms").at("activations").get<double>() * 2,
                   t8.at("activations").get<double>());
  EXPECT_DOUBLE_EQ(half.at("terms").at("grads").get<double>(), t8.at("grads").get<double>());
}

TEST_F(PresetsProject, BadRequestsExit2) {
  const auto code = [&](std::vector<std::string> args) {
    return test::run_speedgate(args, dir).code;
  };
  EXPECT_EQ(code({"presets", "project", "--db", "c.db", "--preset", "no_such_budget"}), 2);
  EXPECT_EQ(code({"presets", "project", "--db", "c.db", "--config", "NOT_EVALUATED=1"}), 2);
  EXPECT_EQ(code({"presets", "project", "--db", "c.db"}), 2);  // neither --preset nor --config
  EXPECT_EQ(code({"presets", "project", "--db", "c.db", "--preset", "fast", "--zero-stage", "4"}),
            2);
  EXPECT_EQ(code({"presets", "project", "--db", "c.db", "--preset", "fast", "--config", "A=1"}), 2);
  EXPECT_EQ(code({"presets", "project", "--db", "missing.db", "--preset", "fast"}), 2);
  EXPECT_EQ(code({"presets", "project", "--db", "c.db", "--campaign", "99", "--preset", "fast"}),
            2);
  EXPECT_FALSE(fs::exists(dir + "/missing.db"));
  auto r = test::run_speedgate({"presets", "project", "--db", "c.db", "--preset", "no_such_budget"},
                               dir);
  EXPECT_NE(r.err.find("no_such_budget"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sg::agent
