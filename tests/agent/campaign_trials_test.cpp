// Campaigns of the fake trainer and how their trials run: kernel timing trials pick the
// variants training may try, and one at a time the gate run is the first speed pair's
// candidate.
#include <filesystem>
#include <map>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "campaign_support.hpp"

namespace sg::agent {
namespace {

using test::kernel_trial_count;

// A campaign of the small fake manifest with ROPE's kernel variants, whose threads=128
// variant has the fault `fault` (FAKE_KERNEL_DRIFT or FAKE_KERNEL_MISMATCH).
struct KernelCampaign : test::FakeCampaign {
  KernelCampaign(const std::string& tag, std::vector<std::string> plan, const std::string& fault)
      : test::FakeCampaign(tag, std::move(plan)), fault_(fault, "threads=128") {}
  test::ScopedEnv small_{"FAKE_MANIFEST", "small"};
  test::ScopedEnv kernels_{"FAKE_KERNELS", "1"};
  test::ScopedEnv fault_;
};

// Plan kernels,stack: one kernel trial times ROPE's variants (recorded in kernel_timings),
// the fastest (threads=128) changes the loss bits in training and fails the gate, the
// next (threads=64) is verified, and the stack's combinations and the presets carry it.
TEST(Campaign, KernelTrialsPickTheFastestVariantThatTrainsBitwise) {
  KernelCampaign c("kernel_trials", {"kernels", "stack"}, "FAKE_KERNEL_DRIFT");
  auto cid = c.run();
  Store s(c.options.db_path);
  std::map<std::string, double> timed;
  for (const auto& k : s.kernel_timings(cid, "ROPE")) timed[k.params] = k.fwdbwd_us;
  EXPECT_EQ(timed, (std::map<std::string, double>{
                       {"plain", 20.0}, {"threads=128", 8.0}, {"threads=64", 10.0}}));
  EXPECT_EQ(kernel_trial_count(s, cid), 1);
  std::map<std::string, Disposition> verdicts;
  for (const auto& e : s.evaluations(cid)) verdicts[e.config_key] = e.disposition;
  EXPECT_EQ(verdicts.at("KERNEL_ROPE=threads=128,TEXT_CACHE=1"), Disposition::gate_failed);
  EXPECT_TRUE(verdicts.at("KERNEL_ROPE=threads=64,TEXT_CACHE=1") == Disposition::accepted ||
              verdicts.at("KERNEL_ROPE=threads=64,TEXT_CACHE=1") == Disposition::slower);
  for (const auto& [key, d] : verdicts) {
    if (key.find("TEXT_CACHE=1") != std::string::npos &&
        key != "KERNEL_ROPE=threads=128,TEXT_CACHE=1") {
      EXPECT_NE(key.find("KERNEL_ROPE=threads=64"), std::string::npos)
          << key << ": the verified variant rides along";
    }
  }
  emit_presets(s, cid, c.dir + "/presets");
  const std::string fast = read_file(c.dir + "/presets/fast.env").value_or("");
  EXPECT_NE(fast.find("SG_KERNEL_ROPE=threads=64"), std::string::npos) << fast;
  // Resumed: the stored kernel trial is reused, not run again.
  c.options.require_resume = true;
  EXPECT_EQ(c.run(), cid);
  EXPECT_EQ(kernel_trial_count(s, cid), 1);
}

// A variant the kernel trial reports as not bitwise the plain one is recorded but never
// tried in training, however fast.
TEST(Campaign, KernelTrialMismatchIsNeverTriedInTraining) {
  KernelCampaign c("kernel_mismatch", {"kernels"}, "FAKE_KERNEL_MISMATCH");
  auto cid = c.run();
  Store s(c.options.db_path);
  std::map<std::string, bool> matches;
  for (const auto& k : s.kernel_timings(cid, "ROPE")) matches[k.params] = k.matches_plain;
  EXPECT_EQ(matches, (std::map<std::string, bool>{
                         {"plain", true}, {"threads=128", false}, {"threads=64", true}}));
  std::vector<std::string> configs;
  for (const auto& e : s.evaluations(cid)) configs.push_back(e.config_key);
  EXPECT_EQ(configs, (std::vector<std::string>{"", "KERNEL_ROPE=threads=64,TEXT_CACHE=1"}));
}

// Trials one at a time (a CPU host here, one GPU on the H200): the gate run is the
// candidate's side of the first speed pair, its baseline run right after it once the gate
// passed, so an evaluation with R repeats runs R baseline and R-1 further candidate runs,
// not R and R; the gate run names its pair in its key, and a candidate that fails the gate
// costs no baseline run.
TEST(Campaign, TheGateRunIsTheFirstPairsCandidateWhenTrialsRunOneAtATime) {
  test::FakeCampaign c("gate_pair", {"stack"});
  c.options.speed.repeats = 2;
  auto cid = c.run();
  Store s(c.options.db_path);
  std::map<std::int64_t, TrialRow> trials;
  for (auto& t : s.trials(cid)) trials[t.id] = t;
  int checked = 0;
  for (const auto& e : s.evaluations(cid)) {
    if (e.strategy == "baseline") continue;
    std::map<std::string, int> purposes;
    for (auto id : e.trial_ids) ++purposes[trials.at(id).purpose];
    if (e.disposition == Disposition::gate_failed) {
      EXPECT_EQ(purposes["speed_base"], 0) << e.config_key << ": no baseline run for a failed gate";
      continue;
    }
    if (e.disposition != Disposition::accepted) continue;
    EXPECT_EQ(purposes["candidate"], 1) << e.config_key;
    EXPECT_EQ(purposes["speed_base"], 2) << e.config_key;
    EXPECT_EQ(purposes["speed_cand"], 1) << e.config_key;
    ASSERT_GE(e.trial_ids.size(), 2u);
    const TrialRow& cand = trials.at(e.trial_ids[0]);
    const TrialRow& base = trials.at(e.trial_ids[1]);
    EXPECT_EQ(cand.purpose, "candidate") << e.config_key;
    EXPECT_EQ(base.purpose, "speed_base") << e.config_key;
    EXPECT_EQ(base.repeat, 0) << e.config_key;
    EXPECT_EQ(base.id, cand.id + 1) << "nothing runs between the pair's two sides";
    const std::string names_pair = "|" + e.config_key;  // the key's last field: paired_with
    ASSERT_GT(cand.trial_key.size(), names_pair.size());
    EXPECT_EQ(cand.trial_key.substr(cand.trial_key.size() - names_pair.size()), names_pair)
        << "the gate run's key names its pair: " << cand.trial_key;
    // The verdict's first pair is (that baseline run, the gate run); every pair is stored.
    const std::vector<SpeedPairRow> pairs = s.speed_pairs(e.campaign_id, e.id);
    ASSERT_EQ(static_cast<int>(pairs.size()), e.pairs) << e.config_key;
    ASSERT_GE(pairs.size(), 2u) << e.config_key;
    EXPECT_EQ(pairs[0].base_trial_id, base.id) << e.config_key;
    EXPECT_EQ(pairs[0].cand_trial_id, cand.id) << e.config_key;
    EXPECT_GE(e.speedup_lo, 1.02) << e.config_key
                                  << ": accepted means the lower bound cleared 1 + min effect";
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace sg::agent
