// Kernel-variant families: constraint evaluation, candidate enumeration, configs,
// presets and the local strategy's variant search (simulation mode).
#include "agent/protocol/kernel_params.hpp"

#include <gtest/gtest.h>

#include "agent/common/files.hpp"
#include "agent/presets/preset_file.hpp"
#include "agent/search/replay.hpp"
#include "agent/search/strategy.hpp"

namespace sg::agent {
namespace {

Manifest manifest_with_family(bool available = true) {
  auto j = nlohmann::json::parse(
      read_file(std::string(SPEEDGATE_SOURCE_DIR) + "/tests/agent/data/recorded_manifest.json")
          .value());
  j["kernel_families"] = {{{"name", "ROPE"},
                           {"env", "SG_KERNEL_ROPE"},
                           {"switch", "A"},
                           {"parameters",
                            {{{"name", "threads"}, {"values", {"64", "128", "256"}}},
                             {{"name", "vec"}, {"values", {"1", "2", "4"}}}}},
                           {"constraints", {"threads*vec<=256"}},
                           {"variants", {"plain_aten"}},
                           {"available", available},
                           {"unavailable_reason", available ? "" : "no CUDA"}}};
  return parse_manifest(j);
}

TEST(KernelParams, ConstraintEvaluation) {
  EXPECT_EQ(eval_constraint("threads*vec<=1024", {{"threads", 256}, {"vec", 4}}), true);
  EXPECT_EQ(eval_constraint("threads*vec<=1024", {{"threads", 512}, {"vec", 4}}), false);
  EXPECT_EQ(eval_constraint("(a + b) / 2 == 3", {{"a", 2}, {"b", 4}}), true);
  EXPECT_EQ(eval_constraint("a - 1 > b", {{"a", 2}, {"b", 4}}), false);
  EXPECT_FALSE(eval_constraint("nope*2<=4", {{"a", 1}}).has_value());
  EXPECT_FALSE(eval_constraint("a**2<=4", {{"a", 1}}).has_value());
  EXPECT_FALSE(eval_constraint("a", {{"a", 1}}).has_value());
}

TEST(KernelParams, CandidatesRespectConstraints) {
  Manifest m = manifest_with_family();
  auto c = kernel_candidates(m.kernel_families[0]);
  std::vector<std::string> want = {"threads=64,vec=1",  "threads=64,vec=2",  "threads=64,vec=4",
                                   "threads=128,vec=1", "threads=128,vec=2", "threads=256,vec=1"};
  EXPECT_EQ(c, want);
}

// Candidates come in canonical form (parameters sorted by name), as the trainer's
// kernel-trial results and presets write them, whatever the manifest's order.
TEST(KernelParams, CandidatesAreCanonical) {
  KernelFamily f;
  f.name = "CAT";
  f.parameters = {{"threads", {"128", "256"}}, {"flat", {"0", "1"}}};
  EXPECT_EQ(kernel_candidates(f),
            (std::vector<std::string>{"flat=0,threads=128", "flat=1,threads=128",
                                      "flat=0,threads=256", "flat=1,threads=256"}));
  EXPECT_EQ(canonical_kernel_value("vec=2,threads=64"), "threads=64,vec=2");
}

TEST(KernelParams, ValuesAreValidated) {
  Manifest m = manifest_with_family();
  const KernelFamily& f = m.kernel_families[0];
  EXPECT_EQ(validate_kernel_value(f, "threads=128,vec=2"), std::nullopt);
  EXPECT_NE(validate_kernel_value(f, "threads=256,vec=4").value_or("").find("violates"),
            std::string::npos);
  EXPECT_NE(validate_kernel_value(f, "threads=100").value_or("").find("not one of"),
            std::string::npos);
  EXPECT_NE(validate_kernel_value(f, "blocks=1").value_or("").find("unknown parameter"),
            std::string::npos);
  EXPECT_NE(validate_kernel_value(f, "threads").value_or("").find("name=value"), std::string::npos);
}

TEST(KernelParams, ConfigKeyRoundTripsAndRequiresTheSwitch) {
  Manifest m = manifest_with_family();
  Config c = {{"KERNEL_ROPE", "threads=128,vec=2"}};
  EXPECT_NE(validate_config(c, m), std::nullopt);
  ASSERT_TRUE(close_requires(c, m));
  EXPECT_EQ(c.at("A"), "1");
  EXPECT_EQ(validate_config(c, m), std::nullopt);
  EXPECT_EQ(config_from_key(config_key(c)), c);
  auto env = config_env(c, m);
  EXPECT_NE(
      std::find(env.begin(), env.end(),
                std::make_pair(std::string("SG_KERNEL_ROPE"), std::string("threads=128,vec=2"))),
      env.end());
  EXPECT_NE(validate_config(c, manifest_with_family(/*available=*/false))
                .value_or("")
                .find("unavailable"),
            std::string::npos);
}

TEST(KernelParams, PresetRoundTrip) {
  Manifest m = manifest_with_family();
  Config c = {{"A", "1"}, {"KERNEL_ROPE", "threads=64,vec=4"}};
  std::string text = render_preset({"x"}, c, m);
  EXPECT_NE(text.find("\nSG_KERNEL_ROPE=threads=64,vec=4\n"), std::string::npos) << text;
  PresetParse p = parse_preset(text, m);
  ASSERT_TRUE(p.ok()) << p.errors.front();
  EXPECT_EQ(p.config, c);
  EXPECT_FALSE(parse_preset("SG_A=1\nSG_KERNEL_ROPE=threads=256,vec=4\n", m).ok());
  EXPECT_FALSE(parse_preset("SG_KERNEL_ROPE=threads=64,vec=1\n", m).ok()) << "its switch is off";
}

TEST(KernelParams, LocalSearchTriesEveryValidVariantOnTheSwitch) {
  Manifest m = manifest_with_family();
  nlohmann::json table = {{"entries", nlohmann::json::array()}};
  table["entries"].push_back(
      {{"config", {{"A", "1"}}}, {"steps", 4}, {"disposition", "accepted"}, {"speedup", 1.3}});
  table["entries"].push_back({{"config", {{"A", "1"}, {"KERNEL_ROPE", "threads=128,vec=2"}}},
                              {"steps", 4},
                              {"disposition", "accepted"},
                              {"speedup", 1.45}});
  ReplayEvaluator replay(table);
  SearchOptions o;
  o.screen_steps = 4;
  o.full_steps = 4;
  SearchContext ctx(m, replay, o);
  ctx.run_strategy("local");
  int kernel_calls = 0;
  for (const auto& [key, steps] : replay.calls()) {
    if (key.find("KERNEL_ROPE") == std::string::npos) continue;
    ++kernel_calls;
    EXPECT_EQ(key.rfind("A=1,KERNEL_ROPE=", 0), 0u) << key;
    EXPECT_EQ(key.find("threads=256;vec=4"), std::string::npos) << "constraint violated: " << key;
  }
  EXPECT_EQ(kernel_calls, 6);
  ASSERT_TRUE(ctx.best_single.count("KERNEL_ROPE"));
  EXPECT_EQ(ctx.best_single.at("KERNEL_ROPE").config.at("KERNEL_ROPE"), "threads=128,vec=2");
}

}  // namespace
}  // namespace sg::agent
