// Trial faults inside a real campaign (docs/reliability.md): the fake trainer fails
// one switch value per fault kind while the baseline and the other switches stay
// healthy. Every faulted trial ends as its disposition with both logs kept, the
// campaign runs on to completion, and no preset carries a faulted value.
#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "agent/common/files.hpp"
#include "agent/store/store.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

TEST(FaultCampaign, EveryFaultEndsAsItsDispositionAndTheCampaignContinues) {
  const std::string dir = test::make_temp_dir("faultcampaign");
  // One fault per switch that "screen" tries (each switch once, one non-default
  // value): switch value -> the fault it triggers and the disposition it must end as.
  // The remaining result faults (empty, missing) and exit 1 are runner tests.
  const std::map<std::string, std::pair<std::string, Disposition>> faults = {
      {"ACCUM_BUG=1", {"oom", Disposition::oom}},
      {"BAD_BITS=1", {"nan", Disposition::nan}},
      {"PAIR_A=1", {"sigkill", Disposition::killed}},
      {"PAIR_B=1", {"garbage", Disposition::invalid_result}},
      {"SLOWER=1", {"hang_grandchild", Disposition::timeout}},
      {"WORKERS=1", {"segv", Disposition::crash}},
      {"CKPT_LAYERS=2", {"partial", Disposition::invalid_result}},
      {"ATTN=efficient", {"wrong_schema", Disposition::invalid_result}},
  };
  std::string rules;
  for (const auto& [value, fault] : faults)
    rules += (rules.empty() ? "" : ",") + value + ":" + fault.first;
  // FAST_MISS=1 (with TEXT_CACHE=1, which it requires) floods stdout with 10 MiB and
  // still succeeds; TEXT_CACHE=1 alone stays healthy.
  rules += ",FAST_MISS=1:big_output";
  const std::string flood_key = "FAST_MISS=1,TEXT_CACHE=1";

  auto r = test::run_speedgate(
      test::tune_args("wam", "sg.db", test::fake_trainer(), 3, 3,
                      {"--plan", "screen", "--trial-timeout", "15", "--target-micro-batch", "32",
                       "--memory-budget", "fast=141GiB", "--presets-out", "presets"}),
      dir, {{"FAKE_MANIFEST", "full"}, {"FAKE_FAULT_IF", rules}});
  ASSERT_EQ(r.code, 0) << r.err;

  Store s(dir + "/sg.db", /*read_only=*/true);
  auto campaign = s.latest_campaign(false);
  ASSERT_TRUE(campaign);
  EXPECT_EQ(campaign->state, "finished");
  std::map<std::string, int> seen;
  bool text_cache_ran = false, flash_ran = false;
  // Log paths are recorded as the controller saw them (relative to its directory).
  auto in_dir = [&](const std::string& p) { return fs::path(p).is_absolute() ? p : dir + "/" + p; };
  for (const auto& t : s.trials(campaign->id)) {
    EXPECT_EQ(t.state, "finished") << t.trial_key;
    EXPECT_TRUE(fs::exists(in_dir(t.stdout_log)))
        << t.trial_key << " lost its stdout log " << t.stdout_log;
    EXPECT_TRUE(fs::exists(in_dir(t.stderr_log)))
        << t.trial_key << " lost its stderr log " << t.stderr_log;
    auto it = faults.find(t.config_key);
    if (it != faults.end()) {
      ++seen[t.config_key];
      ASSERT_TRUE(t.disposition) << t.config_key;
      EXPECT_EQ(*t.disposition, it->second.second)
          << t.config_key << " (" << it->second.first << ") ended as " << to_string(*t.disposition)
          << ": " << t.reason;
      EXPECT_FALSE(t.run_ok);
      EXPECT_FALSE(t.reason.empty()) << t.config_key;
    }
    if (t.config_key == "TEXT_CACHE=1") text_cache_ran |= t.run_ok;
    if (t.config_key == flood_key) {
      flash_ran |= t.run_ok;
      EXPECT_GE(fs::file_size(in_dir(t.stdout_log)), 10u << 20) << "the flood reached the log";
    }
  }
  for (const auto& [value, fault] : faults) EXPECT_GE(seen[value], 1) << value << " never ran";
  EXPECT_TRUE(text_cache_ran) << "healthy switches after the faults still ran";
  EXPECT_TRUE(flash_ran) << "10 MiB of output is not a failure";
  // The evaluations never accept a faulted value, so no preset names one.
  for (const auto& e : s.evaluations(campaign->id)) {
    if (faults.count(e.config_key)) EXPECT_NE(e.disposition, Disposition::accepted) << e.config_key;
  }
  // One budget only: with CKPT_LAYERS faulted, nothing fits 80 GiB (that is exit 1).
  for (const char* preset : {"/presets/fast.env"}) {
    const std::string text = read_file(dir + preset).value_or("<missing>");
    EXPECT_NE(text, "<missing>") << preset;
    for (const auto& [value, fault] : faults)
      EXPECT_EQ(text.find("SG_" + value + "\n"), std::string::npos) << preset << ": " << value;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sg::agent
