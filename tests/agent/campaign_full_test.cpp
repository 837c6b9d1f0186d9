// One whole campaign against the fake trainer (tests/agent/data/fake_trainer.py): the
// gate accepts and rejects the right switches, the minifier finds the pair, memory is
// projected, and presets are emitted per budget with a README that justifies them.
#include <filesystem>
#include <optional>

#include <gtest/gtest.h>

#include "agent/presets/preset_file.hpp"
#include "agent/protocol/config.hpp"
#include "campaign_support.hpp"
#include "store_sql.hpp"

namespace sg::agent {
namespace {

using test::GiB;

class FullCampaign : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    spdlog::set_level(spdlog::level::warn);
    dir_ = test::make_temp_dir("campaign");
    CampaignOptions o = test::fake_options(dir_);
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
  static Manifest manifest(Store& s) { return parse_manifest(s.campaign(cid_)->manifest); }

  // The sections of the one test below: each independent, each names itself.
  static void PreflightPassedAndCampaignFinished();
  static void GateVerdictsOfTheSingleSwitches();
  static void MinifierIsolatedThePair();
  static void MemorySwitchIsATradeoffWithLowerProjection();
  static void UnavailableSwitchNeverRun();
  static void PresetsPerBudget();
  static void PresetsAreJustifiedByVerifiedTrials();
  static void SourcedPresetExportsTheSwitches();
  static void ReadmeListsEverySwitch();
  static void ReadmeSaysWhatEachPresetCarries();
  static void ImpossibleBudgetWritesNoPreset();

  static std::string dir_;
  static std::int64_t cid_;
  static EmitResult emit_;
};
std::string FullCampaign::dir_;
std::int64_t FullCampaign::cid_ = 0;
EmitResult FullCampaign::emit_;

// One test on purpose: ctest runs each test in its own process, and the campaign
// is the expensive part; every section is independent and names itself.
TEST_F(FullCampaign, GatesSearchesProjectsAndEmitsPresets) {
  PreflightPassedAndCampaignFinished();
  GateVerdictsOfTheSingleSwitches();
  MinifierIsolatedThePair();
  MemorySwitchIsATradeoffWithLowerProjection();
  UnavailableSwitchNeverRun();
  PresetsPerBudget();
  PresetsAreJustifiedByVerifiedTrials();
  SourcedPresetExportsTheSwitches();
  ReadmeListsEverySwitch();
  ReadmeSaysWhatEachPresetCarries();
  ImpossibleBudgetWritesNoPreset();  // last: it rewrites the campaign's budgets
}

void FullCampaign::PreflightPassedAndCampaignFinished() {
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

// One single-switch evaluation's verdict: its disposition, and where given its gate
// class, its speedup and a phrase of its reason.
struct SingleSwitchVerdict {
  const char* trace;
  const char* key;
  Disposition disposition;
  const char* gate_class;  // nullptr: not checked
  std::optional<double> speedup;
  const char* reason_has;  // nullptr: not checked
};

void FullCampaign::GateVerdictsOfTheSingleSwitches() {
  const SingleSwitchVerdict verdicts[] = {
      {"BitwiseSpeedSwitchAccepted", "TEXT_CACHE=1", Disposition::accepted, "bitwise", 1.3,
       nullptr},
      {"AccumulationBugFailsTheToleranceGate", "ACCUM_BUG=1", Disposition::gate_failed, "tolerance",
       std::nullopt, "grad-norm"},
      {"FlippedBitsFailTheBitwiseGate", "BAD_BITS=1", Disposition::gate_failed, nullptr,
       std::nullopt, "bits differ"},
      {"SlowerSwitchIsSlower", "SLOWER=1", Disposition::slower, nullptr, std::nullopt, nullptr},
      {"ToleranceSwitchInsideBandAccepted", "FAST_MISS=1,TEXT_CACHE=1", Disposition::accepted,
       "tolerance", std::nullopt, nullptr},
  };
  for (const auto& v : verdicts) {
    SCOPED_TRACE(v.trace);
    Store s(dir_ + "/sg.db");
    const EvaluationRow* e = eval(s, v.key);
    EXPECT_TRUE(e);
    if (!e) continue;
    EXPECT_EQ(e->disposition, v.disposition);
    if (v.gate_class) EXPECT_EQ(e->gate_class, v.gate_class);
    if (v.speedup) EXPECT_NEAR(e->speedup, *v.speedup, 1e-9);
    if (v.reason_has) EXPECT_NE(e->reason.find(v.reason_has), std::string::npos) << e->reason;
  }
}

void FullCampaign::MinifierIsolatedThePair() {
  SCOPED_TRACE("MinifierIsolatedThePair");
  Store s(dir_ + "/sg.db");
  const EvaluationRow* e = eval(s, "PAIR_A=1,PAIR_B=1");
  ASSERT_TRUE(e) << "the minifier should have evaluated the pair alone";
  EXPECT_EQ(e->disposition, Disposition::gate_failed);
  EXPECT_EQ(e->strategy, "minify");
}

void FullCampaign::MemorySwitchIsATradeoffWithLowerProjection() {
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

void FullCampaign::UnavailableSwitchNeverRun() {
  SCOPED_TRACE("UnavailableSwitchNeverRun");
  Store s(dir_ + "/sg.db");
  SQLite::Statement q(raw_db(s),
                      "SELECT COUNT(*) FROM trials WHERE config_key LIKE '%CUDA_GRAPHS%'");
  q.executeStep();
  EXPECT_EQ(q.getColumn(0).getInt(), 0);
}

void FullCampaign::PresetsPerBudget() {
  SCOPED_TRACE("PresetsPerBudget");
  ASSERT_TRUE(emit_.all_budgets_met);
  Store s(dir_ + "/sg.db");
  Manifest m = manifest(s);
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

void FullCampaign::PresetsAreJustifiedByVerifiedTrials() {
  SCOPED_TRACE("PresetsAreJustifiedByVerifiedTrials");
  Store s(dir_ + "/sg.db");
  SQLite::Statement q(raw_db(s), "SELECT trial_ids_json FROM presets WHERE campaign_id = ?");
  q.bind(1, cid_);
  int presets = 0;
  while (q.executeStep()) {
    ++presets;
    for (const auto& id : nlohmann::json::parse(q.getColumn(0).getString())) {
      SQLite::Statement t(raw_db(s), "SELECT state, run_ok, disposition FROM trials WHERE id = ?");
      t.bind(1, id.get<std::int64_t>());
      ASSERT_TRUE(t.executeStep());
      EXPECT_EQ(t.getColumn(0).getString(), "finished");
      EXPECT_EQ(t.getColumn(1).getInt(), 1);
    }
  }
  EXPECT_EQ(presets, 2);
}

void FullCampaign::SourcedPresetExportsTheSwitches() {
  SCOPED_TRACE("SourcedPresetExportsTheSwitches");
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
  PresetParse pf = parse_preset(read_file(dir_ + "/presets/fast.env").value(), manifest(s));
  for (const auto& [name, value] : pf.config) {
    EXPECT_NE(env.find("SG_" + name + "=" + value + "\n"), std::string::npos) << name;
  }
}

void FullCampaign::ReadmeListsEverySwitch() {
  SCOPED_TRACE("ReadmeListsEverySwitch");
  auto md = read_file(dir_ + "/presets/README.md");
  ASSERT_TRUE(md);
  Store s(dir_ + "/sg.db");
  for (const auto& sw : manifest(s).switches)
    EXPECT_NE(md->find("| " + sw.name + " |"), std::string::npos) << sw.name;
  EXPECT_NE(md->find("PAIR_A=1,PAIR_B=1"), std::string::npos);
  // No temp files left behind by the atomic writes.
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/presets")) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
}

void FullCampaign::ReadmeSaysWhatEachPresetCarries() {
  SCOPED_TRACE("ReadmeSaysWhatEachPresetCarries");
  const std::string md = read_file(dir_ + "/presets/README.md").value_or("");
  Store s(dir_ + "/sg.db");
  Manifest m = manifest(s);
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

void FullCampaign::ImpossibleBudgetWritesNoPreset() {
  SCOPED_TRACE("ImpossibleBudgetWritesNoPreset");
  Store s(dir_ + "/sg.db");
  raw_db(s).exec(
      "UPDATE campaigns SET options_json = json_set(options_json, '$.memory_budgets', "
      "json('{\"tiny\": 1073741824}'))");
  EmitResult r = emit_presets(s, cid_, dir_ + "/presets2");
  EXPECT_FALSE(r.all_budgets_met);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/presets2/tiny.env"));
}

}  // namespace
}  // namespace sg::agent
