// End-to-end campaigns against the fake trainer (tests/agent/data/fake_trainer.py):
// the gate accepts and rejects the right switches, the minifier finds the pair,
// presets are emitted per budget, and a campaign killed mid-trial resumes.
#include "agent/campaign/campaign.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <boost/process.hpp>

#include "agent/common/errors.hpp"
#include "agent/common/files.hpp"
#include "agent/gate/gate.hpp"
#include "agent/presets/emit.hpp"
#include "agent/presets/preset_file.hpp"
#include "agent/protocol/config.hpp"
#include "agent/report/summary.hpp"
#include "agent/runner/describe.hpp"
#include "agent/store/store.hpp"
#include "store_sql.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

CampaignOptions fake_options(const std::string& dir) {
  CampaignOptions o;
  o.trainer = test::fake_trainer();
  o.workload = "wam";
  o.size = "tiny";
  o.db_path = dir + "/sg.db";
  o.memory.budgets = {{"fast", static_cast<std::int64_t>(141 * GiB)},
                      {"fast_80gb", static_cast<std::int64_t>(80 * GiB)}};
  o.memory.target_micro_batch = 32;
  o.trial.steps = 3;
  o.trial.screen_steps = 3;  // one step budget: halving is covered by the replay tests
  o.trial.seeds = {0, 1000};
  o.speed.repeats = 2;  // the fewest pairs an interval can stand on; the fake's times are exact
  o.speed.max_repeats = 2;
  o.speed.noise_pairs = 0;
  return o;
}

class FullCampaign : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    spdlog::set_level(spdlog::level::warn);
    dir_ = test::make_temp_dir("campaign");
    CampaignOptions o = fake_options(dir_);
    Manifest m = describe_trainer(o.trainer);
    cid_ = run_campaign(o, m);
    Store s(o.db_path);
    emit_ = emit_presets(s, cid_, dir_ + "/presets");
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  static std::optional<EvaluationRow> eval_copy(Store& s, const std::string& key, int steps = 3) {
    const EvaluationRow* e = eval(s, key, steps);
    return e ? std::optional<EvaluationRow>(*e) : std::nullopt;
  }
  // Valid until the next call (one shared vector).
  static const EvaluationRow* eval(Store& s, const std::string& key, int steps = 3) {
    static std::vector<EvaluationRow> rows;
    rows = s.evaluations(cid_);
    for (const auto& r : rows) {
      if (r.config_key == key && r.steps == steps) return &r;
    }
    return nullptr;
  }

  static std::string dir_;
  static std::int64_t cid_;
  static EmitResult emit_;
};
std::string FullCampaign::dir_;
std::int64_t FullCampaign::cid_ = 0;
EmitResult FullCampaign::emit_;

// One test on purpose: ctest runs each test in its own process, and the campaign
// is the expensive part; every section below is independent and names itself.
TEST_F(FullCampaign, GatesSearchesProjectsAndEmitsPresets) {
  {
    SCOPED_TRACE("PreflightPassedAndCampaignFinished");
    Store s(dir_ + "/sg.db");
    auto c = s.campaign(cid_);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->state, "finished");
    EXPECT_EQ(c->deterministic, true);
    EXPECT_TRUE(c->environment_id.has_value());
    SQLite::Statement q(raw_db(s), "SELECT COUNT(*) FROM baselines WHERE campaign_id = ?");
    q.bind(1, cid_);
    q.executeStep();
    EXPECT_GE(q.getColumn(0).getInt(), 3);  // preflight a+b and the band seed
  }
  {
    SCOPED_TRACE("BitwiseSpeedSwitchAccepted");
    Store s(dir_ + "/sg.db");
    const EvaluationRow* e = eval(s, "TEXT_CACHE=1");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->disposition, Disposition::accepted);
    EXPECT_EQ(e->gate_class, "bitwise");
    EXPECT_NEAR(e->speedup, 1.3, 1e-9);
  }
  {
    SCOPED_TRACE("AccumulationBugFailsTheToleranceGate");
    Store s(dir_ + "/sg.db");
    const EvaluationRow* e = eval(s, "ACCUM_BUG=1");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->disposition, Disposition::gate_failed);
    EXPECT_EQ(e->gate_class, "tolerance");
    EXPECT_NE(e->reason.find("grad-norm"), std::string::npos) << e->reason;
  }
  {
    SCOPED_TRACE("FlippedBitsFailTheBitwiseGate");
    Store s(dir_ + "/sg.db");
    const EvaluationRow* e = eval(s, "BAD_BITS=1");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->disposition, Disposition::gate_failed);
    EXPECT_NE(e->reason.find("bits differ"), std::string::npos) << e->reason;
  }
  {
    SCOPED_TRACE("SlowerSwitchIsSlower");
    Store s(dir_ + "/sg.db");
    const EvaluationRow* e = eval(s, "SLOWER=1");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->disposition, Disposition::slower);
  }
  {
    SCOPED_TRACE("ToleranceSwitchInsideBandAccepted");
    Store s(dir_ + "/sg.db");
    const EvaluationRow* e = eval(s, "FAST_MISS=1,TEXT_CACHE=1");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->disposition, Disposition::accepted);
    EXPECT_EQ(e->gate_class, "tolerance");
  }
  {
    SCOPED_TRACE("MinifierIsolatedThePair");
    Store s(dir_ + "/sg.db");
    const EvaluationRow* e = eval(s, "PAIR_A=1,PAIR_B=1");
    ASSERT_TRUE(e) << "the minifier should have evaluated the pair alone";
    EXPECT_EQ(e->disposition, Disposition::gate_failed);
    EXPECT_EQ(e->strategy, "minify");
  }
  {
    SCOPED_TRACE("MemorySwitchIsATradeoffWithLowerProjection");
    Store s(dir_ + "/sg.db");
    const std::optional<EvaluationRow> base = eval_copy(s, "");  // two rows at once: copies
    const std::optional<EvaluationRow> ckpt = eval_copy(s, "CKPT_LAYERS=2");
    ASSERT_TRUE(base && ckpt);
    EXPECT_NEAR(base->projected_peak_bytes, 86.5 * GiB, 1e6);  // 6.5 GiB fixed + 32 x 2.5 GiB
    EXPECT_NEAR(ckpt->projected_peak_bytes, 54.5 * GiB, 1e6);
    EXPECT_EQ(ckpt->disposition, Disposition::accepted);
    SQLite::Statement q(raw_db(s),
                        "SELECT COUNT(*) FROM projections WHERE campaign_id = ? AND inputs_json "
                        "LIKE '%per_sample%'");
    q.bind(1, cid_);
    q.executeStep();
    EXPECT_GT(q.getColumn(0).getInt(), 5);
  }
  {
    SCOPED_TRACE("UnavailableSwitchNeverRun");
    Store s(dir_ + "/sg.db");
    SQLite::Statement q(raw_db(s),
                        "SELECT COUNT(*) FROM trials WHERE config_key LIKE '%CUDA_GRAPHS%'");
    q.executeStep();
    EXPECT_EQ(q.getColumn(0).getInt(), 0);
  }
  {
    SCOPED_TRACE("PresetsPerBudget");
    ASSERT_TRUE(emit_.all_budgets_met);
    Store s(dir_ + "/sg.db");
    Manifest m = parse_manifest(s.campaign(cid_)->manifest);
    auto fast = read_file(dir_ + "/presets/fast.env");
    auto small = read_file(dir_ + "/presets/fast_80gb.env");
    ASSERT_TRUE(fast && small);
    PresetParse pf = parse_preset(*fast, m), ps = parse_preset(*small, m);
    ASSERT_TRUE(pf.ok()) << pf.errors.front();
    ASSERT_TRUE(ps.ok()) << ps.errors.front();
    EXPECT_EQ(pf.config.at("TEXT_CACHE"), "1");
    EXPECT_FALSE(pf.config.count("ACCUM_BUG"));
    EXPECT_FALSE(pf.config.count("BAD_BITS"));
    EXPECT_FALSE(pf.config.count("CKPT_LAYERS")) << "141 GiB fits without recompute";
    EXPECT_TRUE(ps.config.count("CKPT_LAYERS")) << "80 GiB needs recompute";
    EXPECT_FALSE(pf.config.count("PAIR_A") && pf.config.count("PAIR_B"));
    for (const char* what :
         {"campaign: ", "trial ids: ", "fingerprint: ", "speedup: ", "projected peak: "}) {
      EXPECT_NE(fast->find(std::string("# ") + what), std::string::npos) << what;
    }
  }
  {
    SCOPED_TRACE("PresetsAreJustifiedByVerifiedTrials");
    Store s(dir_ + "/sg.db");
    SQLite::Statement q(raw_db(s), "SELECT trial_ids_json FROM presets WHERE campaign_id = ?");
    q.bind(1, cid_);
    int presets = 0;
    while (q.executeStep()) {
      ++presets;
      for (const auto& id : nlohmann::json::parse(q.getColumn(0).getString())) {
        SQLite::Statement t(raw_db(s),
                            "SELECT state, run_ok, disposition FROM trials WHERE id = ?");
        t.bind(1, id.get<std::int64_t>());
        ASSERT_TRUE(t.executeStep());
        EXPECT_EQ(t.getColumn(0).getString(), "finished");
        EXPECT_EQ(t.getColumn(1).getInt(), 1);
      }
    }
    EXPECT_EQ(presets, 2);
  }
  {
    SCOPED_TRACE("SourcedPresetExportsTheSwitches");
    test::CliRun r;
    ProcessSpec spec;
    spec.exe = "/bin/sh";
    spec.args = {"-c", "set -a; . \"$0\"; env", dir_ + "/presets/fast.env"};
    spec.env = {{"PATH", "/usr/bin:/bin"}};
    spec.stdout_log = dir_ + "/sh.out";
    spec.stderr_log = dir_ + "/sh.err";
    ProcessOutcome p = run_process(spec);
    EXPECT_EQ(p.exit_code, 0);
    std::string env = read_file(spec.stdout_log).value_or("");
    EXPECT_NE(env.find("\nSG_TEXT_CACHE=1\n"), std::string::npos) << env;
    Store s(dir_ + "/sg.db");
    Manifest m = parse_manifest(s.campaign(cid_)->manifest);
    PresetParse pf = parse_preset(read_file(dir_ + "/presets/fast.env").value(), m);
    for (const auto& [name, value] : pf.config) {
      EXPECT_NE(env.find("SG_" + name + "=" + value + "\n"), std::string::npos) << name;
    }
  }
  {
    SCOPED_TRACE("ReadmeListsEverySwitch");
    auto md = read_file(dir_ + "/presets/README.md");
    ASSERT_TRUE(md);
    Store s(dir_ + "/sg.db");
    Manifest m = parse_manifest(s.campaign(cid_)->manifest);
    for (const auto& sw : m.switches)
      EXPECT_NE(md->find("| " + sw.name + " |"), std::string::npos) << sw.name;
    EXPECT_NE(md->find("PAIR_A=1,PAIR_B=1"), std::string::npos);
    // No temp files left behind by the atomic writes.
    for (const auto& e : std::filesystem::directory_iterator(dir_ + "/presets")) {
      EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
    }
  }
  {
    SCOPED_TRACE("ReadmeSaysWhatEachPresetCarries");
    const std::string md = read_file(dir_ + "/presets/README.md").value_or("");
    Store s(dir_ + "/sg.db");
    Manifest m = parse_manifest(s.campaign(cid_)->manifest);
    const auto at = md.find("## What each preset carries");
    ASSERT_NE(at, std::string::npos) << md;
    const std::string section = md.substr(at, md.find("## Switches") - at);
    const auto line_at = section.find("- **fast.env**: proven alone: ");
    ASSERT_NE(line_at, std::string::npos) << section;
    const std::string proven = section.substr(line_at, section.find('\n', line_at) - line_at);
    // Every switch fast.env sets is either proven alone (accepted with an interval) or carried.
    for (const auto& [name, value] :
         parse_preset(read_file(dir_ + "/presets/fast.env").value(), m).config) {
      const bool is_proven = proven.find("`" + name + "`") != std::string::npos;
      const bool is_carried =
          section.find("carried: `" + name + "=" + value + "`") != std::string::npos;
      EXPECT_TRUE(is_proven != is_carried) << name << "\n" << section;
    }
    // The fake trainer has no `perturb` capability: no rounding band, and the tolerance
    // switches say they were gated by the seed band (MutationSuite checks the rounding band's
    // wording).
    ASSERT_TRUE(s.rounding_bands(cid_).empty());
    EXPECT_NE(md.find("no (gated by the seed band)"), std::string::npos) << md;
    EXPECT_EQ(md.find("gated by 2x the rounding band"), std::string::npos) << md;
  }
  {
    SCOPED_TRACE("ImpossibleBudgetWritesNoPreset");
    Store s(dir_ + "/sg.db");
    raw_db(s).exec(
        "UPDATE campaigns SET options_json = json_set(options_json, '$.memory_budgets', "
        "json('{\"tiny\": 1073741824}'))");
    EmitResult r = emit_presets(s, cid_, dir_ + "/presets2");
    EXPECT_FALSE(r.all_budgets_met);
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/presets2/tiny.env"));
  }
}

TEST(Campaign, RerunOfAnUnfinishedCampaignRerunsNothingFinished) {
  spdlog::set_level(spdlog::level::warn);
  std::string dir = test::make_temp_dir("rerun");
  test::ScopedEnv small("FAKE_MANIFEST", "small");
  CampaignOptions o = fake_options(dir);
  o.search.plan = {"screen"};
  Manifest m = describe_trainer(o.trainer);
  auto cid = run_campaign(o, m);
  std::size_t trials = 0;
  {
    Store s(o.db_path);
    trials = s.trials(cid).size();
    raw_db(s).exec("UPDATE campaigns SET state = 'running'");  // as if killed just before finishing
  }
  EXPECT_EQ(run_campaign(o, m), cid);
  Store s(o.db_path);
  EXPECT_EQ(s.trials(cid).size(), trials) << "every finished trial re-used";
  std::filesystem::remove_all(dir);
}

TEST(Campaign, NonDeterministicEnvironmentGatesEverythingByTolerance) {
  spdlog::set_level(spdlog::level::warn);
  std::string dir = test::make_temp_dir("nondet");
  test::ScopedEnv small("FAKE_MANIFEST", "small");
  test::ScopedEnv nd("FAKE_NONDETERMINISTIC", "1");
  CampaignOptions o = fake_options(dir);
  o.search.plan = {"screen"};
  auto cid = run_campaign(o, describe_trainer(o.trainer));
  Store s(o.db_path);
  EXPECT_EQ(s.campaign(cid)->deterministic, false);
  EXPECT_NE(s.campaign(cid)->note.find("NON-DETERMINISTIC"), std::string::npos);
  for (const auto& e : s.evaluations(cid)) EXPECT_EQ(e.gate_class, "tolerance") << e.config_key;
  std::filesystem::remove_all(dir);
}

TEST(Campaign, BaselineFailureIsAGateFailure) {
  spdlog::set_level(spdlog::level::warn);
  std::string dir = test::make_temp_dir("basefail");
  test::ScopedEnv crash("FAKE_FAULT", "crash");
  CampaignOptions o = fake_options(dir);
  EXPECT_THROW(run_campaign(o, describe_trainer(o.trainer)), GateFailure);
  std::filesystem::remove_all(dir);
}

TEST(Campaign, TrialBudgetIsRespected) {
  spdlog::set_level(spdlog::level::warn);
  std::string dir = test::make_temp_dir("budget");
  CampaignOptions o = fake_options(dir);
  o.budget.trials = 9;
  auto cid = run_campaign(o, describe_trainer(o.trainer));
  Store s(o.db_path);
  EXPECT_EQ(s.trials(cid).size(), 9u);
  EXPECT_EQ(s.campaign(cid)->state, "finished");
  std::filesystem::remove_all(dir);
}

// Budget slices (how the H200 campaign runs in 10-minute device calls): a campaign that
// finished by spending its budget is continued by --resume, with nothing finished re-run,
// and ends with the same evaluations as one uninterrupted campaign; a plain re-run starts
// a new campaign instead.
TEST(Campaign, ResumeContinuesACampaignInBudgetSlices) {
  spdlog::set_level(spdlog::level::warn);
  std::string dir = test::make_temp_dir("slices");
  test::ScopedEnv small("FAKE_MANIFEST", "small");
  CampaignOptions whole = fake_options(dir + "/whole");
  whole.search.plan = {"screen"};
  const Manifest m = describe_trainer(whole.trainer);
  const auto whole_id = run_campaign(whole, m);
  std::size_t whole_trials = 0;
  std::vector<std::string> whole_evals;
  {
    Store s(whole.db_path);
    whole_trials = s.trials(whole_id).size();
    for (const auto& e : s.evaluations(whole_id))
      whole_evals.push_back(e.config_key + " " + std::string(to_string(e.disposition)));
  }
  ASSERT_GT(whole_trials, 6u);

  CampaignOptions slice = fake_options(dir + "/sliced");
  slice.search.plan = {"screen"};
  slice.budget.trials = 4;
  const auto cid = run_campaign(slice, m);
  {
    Store s(slice.db_path);
    ASSERT_EQ(s.campaign(cid)->state, "finished");
    ASSERT_EQ(s.trials(cid).size(), 4u);
  }
  slice.require_resume = true;
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(run_campaign(slice, m), cid) << "slice " << i << " continues the same campaign";
    Store s(slice.db_path);
    if (s.trials(cid).size() >= whole_trials) break;
  }
  Store s(slice.db_path);
  EXPECT_EQ(s.trials(cid).size(), whole_trials) << "no trial run twice";
  std::vector<std::string> evals;
  for (const auto& e : s.evaluations(cid))
    evals.push_back(e.config_key + " " + std::string(to_string(e.disposition)));
  std::sort(evals.begin(), evals.end());
  std::sort(whole_evals.begin(), whole_evals.end());
  EXPECT_EQ(evals, whole_evals) << "one row per evaluation, the same verdicts as without slices";
  slice.require_resume = false;
  EXPECT_NE(run_campaign(slice, m), cid) << "without --resume a finished campaign is not continued";
  std::filesystem::remove_all(dir);
}

// --probe-at-target: the memory probe runs at the target micro-batch where it fits the
// device, and falls back to twice the measured micro-batch where it runs out of memory.
// The fake device holds 60 GiB: the default at 32 needs 86.5 GiB, CKPT_LAYERS=2 54.5 GiB.
TEST(Campaign, ProbeAtTargetWhereItFitsElseAtTwiceTheMeasuredBatch) {
  spdlog::set_level(spdlog::level::warn);
  std::string dir = test::make_temp_dir("probe_target");
  test::ScopedEnv small("FAKE_MANIFEST", "small");
  test::ScopedEnv device("FAKE_DEVICE_GIB", "60");
  CampaignOptions o = fake_options(dir);
  o.search.plan = {"screen"};
  o.memory.probe_at_target = true;
  auto cid = run_campaign(o, describe_trainer(o.trainer));
  Store s(o.db_path);
  std::map<std::string, std::vector<int>> probes;  // config -> probed micro-batches
  for (const auto& t : s.trials(cid)) {
    if (t.purpose == "memory_probe") probes[t.config_key].push_back(t.micro_batch);
  }
  EXPECT_EQ(probes[""], (std::vector<int>{32, 4}))
      << "the default does not fit at 32: probed again at 4";
  EXPECT_EQ(probes["CKPT_LAYERS=2"], (std::vector<int>{32})) << "CKPT_LAYERS=2 fits at 32";
  auto points = [&](const std::string& key) {
    std::vector<int> mbs;
    const auto rows = s.projections(cid, key);  // alive while its JSON is iterated
    for (const auto& pt : rows.at(0).inputs.at("points"))
      mbs.push_back(pt.at("micro_batch").get<int>());
    return mbs;
  };
  EXPECT_EQ(points(""), (std::vector<int>{2, 4}));
  EXPECT_EQ(points("CKPT_LAYERS=2"), (std::vector<int>{2, 32}));
  // Measured at the target: the stored error compares the projection with that run.
  const auto row = s.projections(cid, "CKPT_LAYERS=2").at(0);
  ASSERT_TRUE(row.relative_error.has_value());
  EXPECT_NEAR(*row.relative_error, 0.0, 1e-9);
  for (const auto& e : s.evaluations(cid)) {
    if (e.config_key == "CKPT_LAYERS=2" || e.config_key.empty())
      EXPECT_NE(e.disposition, Disposition::oom) << e.config_key;
  }
  // Part of the campaign's options (and so of resume); absent when off.
  EXPECT_EQ(s.campaign(cid)->options.value("probe_at_target", false), true);
  std::filesystem::remove_all(dir);
}

// A --plan stack,prune campaign of the combinable fake manifest in `dir`: (campaign id, DB).
std::pair<std::int64_t, std::string> stack_then_prune(const std::string& dir,
                                                      bool probe_at_target) {
  spdlog::set_level(spdlog::level::warn);
  test::ScopedEnv combinable("FAKE_MANIFEST", "combinable");
  CampaignOptions o = fake_options(dir);
  o.search.plan = {"stack", "prune"};
  o.memory.probe_at_target = probe_at_target;
  return {run_campaign(o, describe_trainer(o.trainer)), o.db_path};
}

// With --probe-at-target prune compares its drops by their probes at the target (gate run
// + probe, no speed pair) and pairs only the drop it takes.
TEST(Campaign, PruneComparesDropsByTheirProbesAtTheTarget) {
  const std::string dir = test::make_temp_dir("prune_target");
  const auto [cid, db] = stack_then_prune(dir, /*probe_at_target=*/true);
  Store s(db);
  std::map<std::string, EvaluationRow> evals;  // the last row of each configuration
  for (const auto& e : s.evaluations(cid)) evals[e.config_key] = e;
  const std::string taken = "FAST_MISS=1,TEXT_CACHE=1,WORKERS=4", left = "SLOWER=1,WORKERS=4";
  ASSERT_TRUE(evals.count(taken) && evals.count(left));
  EXPECT_EQ(evals.at(taken).disposition, Disposition::accepted);
  EXPECT_NEAR(evals.at(taken).speedup, 1.30 * 1.10 * 1.15, 1e-9) << "paired once taken";
  EXPECT_TRUE(std::isnan(evals.at(left).speedup)) << "a drop is not paired";
  EXPECT_GT(evals.at(left).projected_peak_bytes, 0) << "its probe ran";
  EXPECT_NE(evals.at(left).reason.find("unpaired"), std::string::npos) << evals.at(left).reason;
  std::map<std::string, int> pairs;  // speed pairs' baseline runs by the configuration they pair
  for (const auto& t : s.trials(cid)) {
    if (t.purpose == "speed_base") pairs[t.trial_key.substr(t.trial_key.rfind('|') + 1)]++;
  }
  EXPECT_EQ(pairs[left], 0);
  EXPECT_EQ(pairs[taken], 2);
  // Only a drop that was taken may become a preset, even where a drop left behind had the
  // fastest probe at the target (noise, here written into its probe).
  {
    SQLite::Statement up(raw_db(s),
                         "UPDATE trials SET samples_per_s = samples_per_s * 10 "
                         "WHERE purpose = 'memory_probe' AND config_key = ?");
    up.bind(1, left);
    ASSERT_EQ(up.exec(), 1);
  }
  const EmitResult presets = emit_presets(s, cid, dir + "/presets");
  ASSERT_FALSE(presets.summary.at("presets").empty());
  for (const auto& p : presets.summary.at("presets")) {
    EXPECT_NE(config_key(p.at("config").get<Config>()), left) << p.dump();
  }
  std::filesystem::remove_all(dir);
}

// A fake campaign with `plan` (memory probes at the target when `probe`) and its presets
// emitted; `env` is set for the campaign only. What the tests below look at.
struct EmittedCampaign {
  Config fast, fast_80gb;                 // the presets' configurations
  std::string fast_file, fast_80gb_file;  // and their files
  std::vector<TargetFinalRow> finals;
  std::vector<std::string> final_trial_keys;  // the finals' runs (final_base, final_cand)
  nlohmann::json summary;                     // speedgate report's
};
EmittedCampaign run_and_emit(const std::string& name, std::vector<std::string> plan, bool probe,
                             const std::map<std::string, std::string>& env = {}) {
  const std::string dir = test::make_temp_dir(name);
  std::vector<std::unique_ptr<test::ScopedEnv>> scoped;
  for (const auto& [k, v] : env) scoped.push_back(std::make_unique<test::ScopedEnv>(k, v));
  CampaignOptions o = fake_options(dir);
  o.search.plan = std::move(plan);
  o.memory.probe_at_target = probe;
  const auto cid = run_campaign(o, describe_trainer(o.trainer));
  Store s(o.db_path);
  const auto r = emit_presets(s, cid, dir + "/presets");
  EmittedCampaign out;
  for (const auto& p : r.summary["presets"]) {
    if (!p.value("written", false)) continue;
    const bool fast = p["name"] == "fast";
    (fast ? out.fast : out.fast_80gb) = p["config"].get<Config>();
    (fast ? out.fast_file : out.fast_80gb_file) =
        read_file(p["path"].get<std::string>()).value_or("");
  }
  out.finals = s.target_finals(cid);
  for (const auto& t : s.trials(cid)) {
    if (t.purpose == "final_base" || t.purpose == "final_cand")
      out.final_trial_keys.push_back(t.trial_key);
  }
  out.summary = campaign_summary(s, cid);
  std::filesystem::remove_all(dir);
  return out;
}

std::string ckpt_layers(const Config& c) {
  return c.count("CKPT_LAYERS") ? c.at("CKPT_LAYERS") : "-1";
}

// With --probe-at-target the presets rank by the probes' samples/s at the target over the
// baseline's: on the stack, CKPT_LAYERS=4 is slower than =2 at the measured micro-batch but
// faster at 32 (FAKE_TARGET_SPEED), so fast_80gb takes =4 and says why; a campaign without
// the probes takes =2.
TEST(Campaign, PresetsRankByThroughputAtTheTargetWhereProbedThere) {
  spdlog::set_level(spdlog::level::warn);
  test::ScopedEnv combinable("FAKE_MANIFEST", "combinable");
  test::ScopedEnv device("FAKE_DEVICE_GIB",
                         "100");  // everything fits at 32: every probe runs there
  test::ScopedEnv target("FAKE_TARGET_SPEED", "CKPT_LAYERS=4:1.2");
  const auto by_target = run_and_emit("rank_at_target", {"stack"}, true);
  EXPECT_EQ(ckpt_layers(by_target.fast_80gb), "4");
  EXPECT_NE(by_target.fast_80gb_file.find("# ranked at the target: "), std::string::npos)
      << by_target.fast_80gb_file;
  EXPECT_NE(by_target.fast_80gb_file.find("at micro-batch 32 (memory probes)"), std::string::npos)
      << by_target.fast_80gb_file;
  const auto by_campaign = run_and_emit("rank_by_campaign", {"stack"}, false);
  EXPECT_EQ(ckpt_layers(by_campaign.fast_80gb), "2");
  EXPECT_EQ(by_campaign.fast_80gb_file.find("ranked"), std::string::npos)
      << by_campaign.fast_80gb_file;
}

// The `finals` strategy pairs each budget's leaders at the target and presets rank by those
// pairs: CKPT_LAYERS=2's memory probe is lucky (FAKE_LUCKY_ONCE, 1.5x once), so the probes
// rank =2 over =4 for fast_80gb although =4 is faster at 32 in every later run. Without
// finals fast_80gb takes =2; with them =4, its header names the paired finals, the report
// lists them, and every finalist's target_finals row holds three accepted rounds.
TEST(Campaign, FinalsPairTheLeadersAtTheTargetAndOutrankALuckyProbe) {
  spdlog::set_level(spdlog::level::warn);
  test::ScopedEnv combinable("FAKE_MANIFEST", "combinable");
  test::ScopedEnv device("FAKE_DEVICE_GIB", "100");
  test::ScopedEnv target("FAKE_TARGET_SPEED", "CKPT_LAYERS=4:1.2");
  const std::string markers = test::make_temp_dir("lucky_markers");  // one marker file per campaign
  const auto lucky = [&](const std::string& name) {
    return std::map<std::string, std::string>{
        {"FAKE_LUCKY_ONCE", "CKPT_LAYERS=2:1.5:" + markers + "/" + name}};
  };
  const auto probes_only = run_and_emit("no_finals", {"stack"}, true, lucky("no_finals"));
  EXPECT_EQ(ckpt_layers(probes_only.fast_80gb), "2");  // the lucky probe decides
  EXPECT_TRUE(probes_only.finals.empty());
  const auto with_finals = run_and_emit("finals", {"stack", "finals"}, true, lucky("finals"));
  EXPECT_EQ(ckpt_layers(with_finals.fast_80gb), "4");
  EXPECT_NE(with_finals.fast_80gb_file.find("(paired finals, 3 rounds)"), std::string::npos)
      << with_finals.fast_80gb_file;
  std::set<std::string> budgets;
  std::map<std::string, double> ckpt_speedup;  // fast_80gb's finalists by CKPT_LAYERS
  for (const auto& f : with_finals.finals) {
    budgets.insert(f.budget_name);
    EXPECT_EQ(f.disposition, Disposition::accepted) << f.config_key << ": " << f.reason;
    EXPECT_EQ(f.micro_batch, 32);
    EXPECT_EQ(f.rounds, 3);
    EXPECT_EQ(f.trial_ids.size(), 6u);  // per round: the baseline and the finalist
    if (f.budget_name == "fast_80gb")
      ckpt_speedup[config_from_key(f.config_key).at("CKPT_LAYERS")] = f.speedup;
  }
  EXPECT_EQ(budgets, (std::set<std::string>{"fast", "fast_80gb"}));
  ASSERT_EQ(ckpt_speedup.size(), 2u);  // fast_80gb's two finalists
  EXPECT_NEAR(ckpt_speedup.at("4") / ckpt_speedup.at("2"), 1.2 * 0.85 / 0.90,
              1e-3);  // paired: the luck is gone
  EXPECT_EQ(with_finals.summary["finals"].size(), with_finals.finals.size());
  EXPECT_GT(with_finals.summary["trials"]["by_purpose"].value("final_cand", 0), 0);
  // Both sides' keys name the pool, so runs are reused (resume, nightly warm start) with
  // the rounds they were paired in, or not at all.
  ASSERT_EQ(with_finals.final_trial_keys.size(), 9u);  // 3 rounds x (baseline + 2 finalists)
  for (const auto& key : with_finals.final_trial_keys)
    EXPECT_NE(key.find("|finals:"), std::string::npos) << key;
  std::filesystem::remove_all(markers);
}

// Round 0 of finals re-gates a bitwise finalist at the target: the bitwise stack
// (SLOWER, TEXT_CACHE, WORKERS) leads fast at 32 (FAST_MISS, in every other stack, is made
// slow there), but with FAKE_TARGET_DRIFT its runs at 32 change the loss bits. Its finals
// row is gate_failed and no preset takes it: fast falls back to the defaults (the paired
// baseline beats the tolerance stack at 32).
TEST(Campaign, AFinalistNotBitwiseAtTheTargetIsLeftOutOfEveryPreset) {
  spdlog::set_level(spdlog::level::warn);
  test::ScopedEnv combinable("FAKE_MANIFEST", "combinable");
  test::ScopedEnv device("FAKE_DEVICE_GIB", "100");
  test::ScopedEnv target("FAKE_TARGET_SPEED", "FAST_MISS=1:0.5");
  const std::string bitwise_stack = "SLOWER=1,TEXT_CACHE=1,WORKERS=4";
  EXPECT_EQ(config_key(run_and_emit("no_target_drift", {"stack", "finals"}, true).fast),
            bitwise_stack);
  const auto drift = run_and_emit("target_drift", {"stack", "finals"}, true,
                                  {{"FAKE_TARGET_DRIFT", "TEXT_CACHE=1"}});
  EXPECT_TRUE(drift.fast.empty());
  EXPECT_NE(drift.fast_file.find(
                "# no finalist beat the baseline paired at the target micro-batch: all defaults"),
            std::string::npos)
      << drift.fast_file;
  bool regated = false;
  for (const auto& f : drift.finals) {
    if (f.config_key != bitwise_stack) continue;
    regated = true;
    EXPECT_EQ(f.disposition, Disposition::gate_failed);
    EXPECT_NE(f.reason.find("not bitwise the baseline at micro-batch 32"), std::string::npos)
        << f.reason;
  }
  EXPECT_TRUE(regated);
}

// Plan kernels,stack: one kernel trial times ROPE's variants (recorded in kernel_timings),
// the fastest (threads=128) changes the loss bits in training and fails the gate, the
// next (threads=64) is verified, and the stack's combinations and the presets carry it.
TEST(Campaign, KernelTrialsPickTheFastestVariantThatTrainsBitwise) {
  spdlog::set_level(spdlog::level::warn);
  std::string dir = test::make_temp_dir("kernel_trials");
  test::ScopedEnv small("FAKE_MANIFEST", "small");
  test::ScopedEnv kernels("FAKE_KERNELS", "1");
  test::ScopedEnv drift("FAKE_KERNEL_DRIFT", "threads=128");
  CampaignOptions o = fake_options(dir);
  o.search.plan = {"kernels", "stack"};
  auto cid = run_campaign(o, describe_trainer(o.trainer));
  Store s(o.db_path);
  std::map<std::string, double> timed;
  for (const auto& k : s.kernel_timings(cid, "ROPE")) timed[k.params] = k.fwdbwd_us;
  EXPECT_EQ(timed, (std::map<std::string, double>{
                       {"plain", 20.0}, {"threads=128", 8.0}, {"threads=64", 10.0}}));
  int kernel_trials = 0;
  for (const auto& t : s.trials(cid)) kernel_trials += t.purpose == "kernel_timing" ? 1 : 0;
  EXPECT_EQ(kernel_trials, 1);
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
  emit_presets(s, cid, dir + "/presets");
  const std::string fast = read_file(dir + "/presets/fast.env").value_or("");
  EXPECT_NE(fast.find("SG_KERNEL_ROPE=threads=64"), std::string::npos) << fast;
  // Resumed: the stored kernel trial is reused, not run again.
  o.require_resume = true;
  EXPECT_EQ(run_campaign(o, describe_trainer(o.trainer)), cid);
  kernel_trials = 0;
  for (const auto& t : s.trials(cid)) kernel_trials += t.purpose == "kernel_timing" ? 1 : 0;
  EXPECT_EQ(kernel_trials, 1);
  std::filesystem::remove_all(dir);
}

// A variant the kernel trial reports as not bitwise the plain one is recorded but never
// tried in training, however fast.
TEST(Campaign, KernelTrialMismatchIsNeverTriedInTraining) {
  spdlog::set_level(spdlog::level::warn);
  std::string dir = test::make_temp_dir("kernel_mismatch");
  test::ScopedEnv small("FAKE_MANIFEST", "small");
  test::ScopedEnv kernels("FAKE_KERNELS", "1");
  test::ScopedEnv mismatch("FAKE_KERNEL_MISMATCH", "threads=128");
  CampaignOptions o = fake_options(dir);
  o.search.plan = {"kernels"};
  auto cid = run_campaign(o, describe_trainer(o.trainer));
  Store s(o.db_path);
  std::map<std::string, bool> matches;
  for (const auto& k : s.kernel_timings(cid, "ROPE")) matches[k.params] = k.matches_plain;
  EXPECT_EQ(matches, (std::map<std::string, bool>{
                         {"plain", true}, {"threads=128", false}, {"threads=64", true}}));
  std::vector<std::string> configs;
  for (const auto& e : s.evaluations(cid)) configs.push_back(e.config_key);
  EXPECT_EQ(configs, (std::vector<std::string>{"", "KERNEL_ROPE=threads=64,TEXT_CACHE=1"}));
  std::filesystem::remove_all(dir);
}

// --plan stack,prune (how the H200 campaign starts): every switch of the combinable manifest
// passes the gate together, so the stack holds SLOWER (0.97x); prune drops it and the
// memory values are tried on the pruned combination, whose points the presets then pick.
TEST(Campaign, StackThenPruneDropsTheSlowerMemberBeforeThePresets) {
  const std::string dir = test::make_temp_dir("stack_prune");
  const auto [cid, db] = stack_then_prune(dir, /*probe_at_target=*/false);
  Store s(db);
  std::map<std::string, EvaluationRow> evals;
  for (const auto& e : s.evaluations(cid)) evals[e.config_key] = e;
  ASSERT_TRUE(evals.count("FAST_MISS=1,SLOWER=1,TEXT_CACHE=1,WORKERS=4")) << "the stack";
  ASSERT_TRUE(evals.count("FAST_MISS=1,TEXT_CACHE=1,WORKERS=4"));
  const EvaluationRow& pruned = evals.at("FAST_MISS=1,TEXT_CACHE=1,WORKERS=4");
  EXPECT_EQ(pruned.strategy, "prune");
  EXPECT_EQ(pruned.disposition, Disposition::accepted);
  EXPECT_NEAR(pruned.speedup, 1.30 * 1.10 * 1.15, 1e-9);
  EXPECT_TRUE(evals.count("SLOWER=1,WORKERS=4"))
      << "TEXT_CACHE dropped with FAST_MISS, which requires it";
  // Drops are compared without their memory probe; the one taken is probed afterwards (its
  // gate and speed trials are reused: one probe trial more, nothing else).
  EXPECT_TRUE(std::isnan(evals.at("SLOWER=1,WORKERS=4").projected_peak_bytes))
      << "a drop left behind";
  EXPECT_GT(pruned.projected_peak_bytes, 0) << "the drop taken";
  std::map<std::string, std::map<std::string, int>> runs;  // config -> purpose -> trials
  for (const auto& t : s.trials(cid)) runs[t.config_key][t.purpose]++;
  EXPECT_EQ(runs["SLOWER=1,WORKERS=4"].count("memory_probe"), 0u);
  EXPECT_EQ(runs["FAST_MISS=1,TEXT_CACHE=1,WORKERS=4"]["memory_probe"], 1);
  EXPECT_EQ(runs["FAST_MISS=1,TEXT_CACHE=1,WORKERS=4"]["candidate"], 1);
  EXPECT_FALSE(evals.count("CKPT_LAYERS=2,FAST_MISS=1,SLOWER=1,TEXT_CACHE=1,WORKERS=4"))
      << "the stack leaves its memory values to prune, which comes after it in the plan";
  for (const char* key : {"CKPT_LAYERS=2,FAST_MISS=1,TEXT_CACHE=1,WORKERS=4",
                          "CKPT_LAYERS=4,FAST_MISS=1,TEXT_CACHE=1,WORKERS=4"}) {
    ASSERT_TRUE(evals.count(key)) << key;
    EXPECT_EQ(evals.at(key).strategy, "prune") << key;
  }
  EmitResult presets = emit_presets(s, cid, dir + "/presets");
  ASSERT_TRUE(presets.all_budgets_met);
  std::map<std::string, std::string> picked;  // budget -> config key
  for (const auto& p : presets.summary.at("presets")) {
    picked[p.at("name").get<std::string>()] = config_key(p.at("config").get<Config>());
  }
  EXPECT_EQ(picked["fast"], "FAST_MISS=1,TEXT_CACHE=1,WORKERS=4");
  EXPECT_EQ(picked["fast_80gb"], "CKPT_LAYERS=2,FAST_MISS=1,TEXT_CACHE=1,WORKERS=4");
  std::filesystem::remove_all(dir);
}

// Trials one at a time (a CPU host here, one GPU on the H200): the gate run is the
// candidate's side of the first speed pair, its baseline run right after it once the gate
// passed, so an evaluation with R repeats runs R baseline and R-1 further candidate runs,
// not R and R; the gate run names its pair in its key, and a candidate that fails the gate
// costs no baseline run.
TEST(Campaign, TheGateRunIsTheFirstPairsCandidateWhenTrialsRunOneAtATime) {
  spdlog::set_level(spdlog::level::warn);
  std::string dir = test::make_temp_dir("gate_pair");
  CampaignOptions o = fake_options(dir);
  o.search.plan = {"stack"};
  o.speed.repeats = 2;
  auto cid = run_campaign(o, describe_trainer(o.trainer));
  Store s(o.db_path);
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
  std::filesystem::remove_all(dir);
}

TEST(Campaign, ResumeWithoutAnyCampaignIsAUsageError) {
  std::string dir = test::make_temp_dir("noresume");
  CampaignOptions o = fake_options(dir);
  o.require_resume = true;
  EXPECT_THROW(run_campaign(o, describe_trainer(o.trainer)), UsageError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sg::agent
