// The protocol through the built binary: describe --json, run's result file, heartbeat,
// exit codes 2/3/4, preset validation naming the line.
#include "trainer_harness.hpp"

#include <gtest/gtest.h>

#include <set>

namespace sg::trainer::testing {
namespace {

TEST(Protocol, DescribeListsSwitchesSizesAndKernelFamilies) {
  const auto m = describe();
  EXPECT_EQ(m.at("protocol"), 1);
  EXPECT_EQ(m.at("trainer"), "speedgate-train");
  const auto& sizes = m.at("workloads").at(0).at("sizes");
  std::set<std::string> names;
  for (const auto& s : sizes) {
    names.insert(s.at("name").get<std::string>());
    EXPECT_GT(s.at("model_flops_per_sample").get<double>(), 0.0);
    if (s.at("name") == "base") {
      const double p = s.at("trainable_params").get<double>();
      EXPECT_GT(p, 0.90e9);
      EXPECT_LT(p, 0.92e9);
      EXPECT_EQ(s.at("tokens_per_sample"), 1296);
    }
    if (s.at("name") == "wam5b") EXPECT_EQ(s.at("tokens_per_sample"), 3526);
  }
  EXPECT_EQ(names, (std::set<std::string>{"tiny", "small", "base", "wam5b"}));
  std::set<std::string> switches;
  for (const auto& s : m.at("switches")) {
    switches.insert(s.at("name").get<std::string>());
    EXPECT_EQ(s.at("env"), "SG_" + s.at("name").get<std::string>());
    for (const char* key : {"type", "values", "default", "requires", "identity", "effect",
                            "available", "unavailable_reason", "doc"}) {
      EXPECT_TRUE(s.contains(key)) << s.at("name") << " lacks " << key;
    }
    EXPECT_EQ(s.at("available").get<bool>(), s.at("unavailable_reason").get<std::string>().empty());
    if (s.at("type") == "int") EXPECT_TRUE(s.contains("min") && s.contains("max"));
  }
  for (const char* must :
       {"TEXT_CACHE", "TEXT_MISS_FAST", "CONTEXT_TRUNC", "FAST_INPUT", "VAE_FIRST", "ATTN_BACKEND",
        "FUSED_ROPE", "FAST_CAT", "FUSED_ADALN", "FUSED_QK_NORM", "CUDA_GRAPHS", "VAE_FULLCLIP",
        "VAE_CHANNELS_LAST", "CKPT_LAYERS", "MIXED_ATTN_CKPT", "TEXT_ENCODER_OFFLOAD",
        "DATA_WORKERS", "PIN_MEMORY", "ALLOC_EXPANDABLE"}) {
    EXPECT_TRUE(switches.count(must)) << must;
  }
  EXPECT_EQ(m.at("kernel_families").size(), 4u);
}

// The data-parallel switches do nothing on one rank: the manifest says so
// (min_world_size, protocol §1) and a one-rank campaign does not search them.
TEST(Protocol, DataParallelSwitchesDeclareTheirMinimumWorldSize) {
  const auto manifest = describe();  // a named copy: the loop must not outlive a temporary
  for (const auto& s : manifest.at("switches")) {
    const std::string name = s.at("name");
    const bool dp = name == "OVERLAP_COMM" || name == "BUCKET_MB" || name == "ZERO1";
    if (dp) {
      EXPECT_EQ(s.value("min_world_size", 1), 2) << name;
    } else {
      EXPECT_FALSE(s.contains("min_world_size"))
          << name << ": does it really do nothing on one rank?";
    }
  }
}

TEST(Protocol, SwitchesDocCoversEveryManifestSwitch) {
  const std::string doc = read_file(std::string(SPEEDGATE_SOURCE_DIR) + "/docs/switches.md");
  ASSERT_FALSE(doc.empty());
  const auto manifest = describe();  // a named copy: the loop must not outlive a temporary
  for (const auto& s : manifest.at("switches")) {
    EXPECT_NE(doc.find("`" + s.at("env").get<std::string>() + "`"), std::string::npos)
        << s.at("env");
  }
}

#if !SPEEDGATE_WITH_CUDA
TEST(Protocol, CudaOnlySwitchesAreUnavailableOnCpuBuild) {
  const auto manifest = describe();  // a named copy: the loop must not outlive a temporary
  for (const auto& s : manifest.at("switches")) {
    const std::string name = s.at("name");
    if (name == "FUSED_ROPE" || name == "FAST_CAT" || name == "FUSED_ADALN" ||
        name == "FUSED_QK_NORM" || name == "CUDA_GRAPHS" || name == "PIN_MEMORY" ||
        name == "ALLOC_EXPANDABLE" || name == "ATTN_BACKEND") {
      EXPECT_FALSE(s.at("available").get<bool>()) << name;
    }
  }
}
#endif

TEST(Protocol, RunWritesResultAndHeartbeat) {
  const std::string hb = temp_dir() + "/hb.json";
  const auto r = run_trainer(tiny_run(3) + " --heartbeat " + hb);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const auto& j = r.result;
  EXPECT_EQ(j.at("status"), "ok");
  EXPECT_EQ(j.at("step_records").size(), 3u);
  EXPECT_EQ(j.at("step_records")[0].at("loss_bits").get<std::string>().size(), 8u);
  EXPECT_EQ(j.at("param_digest").get<std::string>().size(), 16u);
  EXPECT_GT(j.at("samples_per_s").get<double>(), 0.0);
  EXPECT_GT(j.at("model_flops_per_step").get<double>(), 0.0);
  EXPECT_GT(j.at("memory").at("peak_allocated_bytes").at(0).get<int64_t>(), 0);
  EXPECT_GT(j.at("memory").at("breakdown").at("optimizer").get<int64_t>(), 0);
  EXPECT_EQ(j.at("fingerprint").at("threads"), 1);
  EXPECT_EQ(j.at("switches").at("SG_CKPT_LAYERS"), "-1");
  const auto beat = nlohmann::json::parse(read_file(hb));
  EXPECT_EQ(beat.at("step"), 3);
}

// The projection's per-phase lines (docs/controller.md) need every phase's peak; the
// overall peak is the largest of them (it also covers time between phases).
TEST(Protocol, RunReportsThePeakOfEveryPhase) {
  const auto r = run_trainer(tiny_run(2));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const auto& mem = r.result.at("memory");
  const auto overall = mem.at("peak_allocated_bytes").at(0).get<int64_t>();
  const auto& phases = mem.at("phase_peak_allocated_bytes");
  for (const char* phase : {"data", "text", "vae", "forward", "backward", "clip", "optimizer"}) {
    ASSERT_TRUE(phases.contains(phase)) << phase;
    EXPECT_GT(phases.at(phase).get<int64_t>(), 0) << phase;
    EXPECT_LE(phases.at(phase).get<int64_t>(), overall) << phase;
  }
  // Saved activations are live from the forward into the backward: the model state
  // alone (the optimizer phase's floor) is below the backward's peak.
  EXPECT_GT(phases.at("backward").get<int64_t>(),
            mem.at("breakdown").at("parameters").get<int64_t>());
}

TEST(Protocol, BadSwitchesExitTwoNamingTheSwitch) {
  struct Case {
    std::map<std::string, std::string> env;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {{{"SG_NO_SUCH_SWITCH", "1"}}, "SG_NO_SUCH_SWITCH"},
      {{{"SG_TEXT_CACHE", "2"}}, "SG_TEXT_CACHE"},
      {{{"SG_CKPT_LAYERS", "x"}}, "SG_CKPT_LAYERS"},
      {{{"SG_CKPT_LAYERS", "65"}}, "SG_CKPT_LAYERS"},
      {{{"SG_CONTEXT_TRUNC", "1"}}, "SG_CONTEXT_TRUNC"},  // requires TEXT_CACHE=1
      {{{"SG_TEXT_ENCODER_OFFLOAD", "1"}}, "SG_TEXT_ENCODER_OFFLOAD"},
      {{{"SG_KERNEL_NOPE", "threads=1"}}, "SG_KERNEL_NOPE"},
  };
  for (const auto& c : cases) {
    const auto r = run_trainer(tiny_run(1), c.env);
    EXPECT_EQ(r.exit_code, 2) << c.expect;
    EXPECT_NE(r.stderr_text.find(c.expect), std::string::npos) << r.stderr_text;
  }
#if !SPEEDGATE_WITH_CUDA
  const auto r = run_trainer(tiny_run(1), {{"SG_CUDA_GRAPHS", "1"}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("unavailable"), std::string::npos) << r.stderr_text;
  // A preset enabling it is refused the same way, naming the switch and the line, for
  // every workload it applies to.
  const std::string graphs = write_temp("graphs.env", "SG_CKPT_LAYERS=0\nSG_CUDA_GRAPHS=1\n");
  for (const char* workload : {"wam", "lm", "lm_osft"}) {
    const auto p = run_trainer(std::string("run --workload ") + workload +
                               " --size tiny --steps 1 --seed 0 --threads 1 --preset " + graphs);
    EXPECT_EQ(p.exit_code, 2) << workload;
    EXPECT_NE(p.stderr_text.find("graphs.env:2"), std::string::npos) << p.stderr_text;
    EXPECT_NE(p.stderr_text.find("SG_CUDA_GRAPHS is unavailable"), std::string::npos)
        << p.stderr_text;
  }
#endif
}

TEST(Protocol, BadFlagsExitTwo) {
  EXPECT_EQ(run_trainer(tiny_run(1) + " --bogus 1").exit_code, 2);
  EXPECT_EQ(run_trainer("run --workload wam --size huge --steps 1 --seed 0").exit_code, 2);
  EXPECT_EQ(run_trainer("run --workload video --size tiny --steps 1 --seed 0").exit_code,
            2);  // no such workload
  EXPECT_EQ(run_trainer("run --workload lm --size huge --steps 1 --seed 0").exit_code, 2);
  EXPECT_EQ(run_trainer("describe").exit_code, 2);
}

TEST(Protocol, PresetWholeFileValidatedAndLineNamed) {
  const std::string bad =
      write_temp("bad.env", "# fast preset\nSG_TEXT_CACHE=1\n\nSG_TEXT_MISS_FAST=maybe\n");
  auto r = run_trainer(tiny_run(1) + " --preset " + bad);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("bad.env:4"), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("SG_TEXT_MISS_FAST"), std::string::npos) << r.stderr_text;

  const std::string syntax = write_temp("syntax.env", "SG_TEXT_CACHE=1\nexport SG_FAST_INPUT=1\n");
  r = run_trainer(tiny_run(1) + " --preset " + syntax);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("syntax.env:2"), std::string::npos) << r.stderr_text;

  const std::string unmet = write_temp("unmet.env", "SG_FAST_INPUT=1\nSG_CONTEXT_TRUNC=1\n");
  r = run_trainer(tiny_run(1) + " --preset " + unmet);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("unmet.env:2"), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("TEXT_CACHE=1"), std::string::npos) << r.stderr_text;

  // The environment wins over the preset, and satisfies its requires.
  r = run_trainer(tiny_run(1) + " --preset " + unmet, {{"SG_TEXT_CACHE", "1"}});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.result.at("switches").at("SG_CONTEXT_TRUNC"), "1");
}

TEST(Protocol, NonFiniteLossExitsFour) {
  const auto r = run_trainer(tiny_run(3), {{"SPEEDGATE_TEST_FAULT", "nan"}});
  EXPECT_EQ(r.exit_code, 4) << r.stderr_text;
  EXPECT_EQ(r.result.at("status"), "nan");
  EXPECT_EQ(r.result.at("step_records").size(), 2u);
}

// Read one step late, the NaN of step 1 is still reported as step 1's, with no record of
// the step begun meanwhile.
TEST(Protocol, NonFiniteLossExitsFourWithAsyncStepStats) {
  const auto r =
      run_trainer(tiny_run(3), {{"SPEEDGATE_TEST_FAULT", "nan"}, {"SG_ASYNC_STEP_STATS", "1"}});
  EXPECT_EQ(r.exit_code, 4) << r.stderr_text;
  EXPECT_EQ(r.result.at("status"), "nan");
  EXPECT_EQ(r.result.at("step_records").size(), 2u);
  EXPECT_NE(r.stderr_text.find("at step 1"), std::string::npos) << r.stderr_text;
}

// The injected out-of-memory error comes in step 1: the records hold step 0 only, with its
// real values (never a placeholder for the step that failed). With ASYNC_STEP_STATS too,
// bitwise the same: step 0's values, still pending when step 1 fails (warm-up 2: no
// steady-state flush has read them), are read and recorded on the way out.
TEST(Protocol, OutOfMemoryExitsThree) {
  const std::string run = tiny_run(3) + " --warmup-steps 2";
  const auto r = run_trainer(run, {{"SPEEDGATE_TEST_FAULT", "oom"}});
  EXPECT_EQ(r.exit_code, 3) << r.stderr_text;
  EXPECT_EQ(r.result.at("status"), "oom");
  ASSERT_EQ(r.result.at("step_records").size(), 1u);
  EXPECT_EQ(r.result["step_records"][0]["step"], 0);
  EXPECT_GT(r.result["step_records"][0]["loss"].get<double>(), 0.0);
  const auto lagged =
      run_trainer(run, {{"SPEEDGATE_TEST_FAULT", "oom"}, {"SG_ASYNC_STEP_STATS", "1"}});
  EXPECT_EQ(lagged.exit_code, 3) << lagged.stderr_text;
  ASSERT_EQ(lagged.result.at("step_records").size(), 1u);
  EXPECT_EQ(lagged.result["step_records"][0]["loss_bits"],
            r.result["step_records"][0]["loss_bits"]);
  EXPECT_EQ(lagged.result["step_records"][0]["grad_norm_bits"],
            r.result["step_records"][0]["grad_norm_bits"]);
}

}  // namespace
}  // namespace sg::trainer::testing
