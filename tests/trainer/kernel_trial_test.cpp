// `speedgate-train kernel-trial` (protocol §5) on the CPU: the plain variant of every
// family is timed on the family's ops at a size's shapes, the result says so in the
// protocol's schema, and bad input exits 2 naming what is wrong without writing a result.
#include "trainer_harness.hpp"

#include <gtest/gtest.h>

#include <filesystem>

namespace sg::trainer::testing {
namespace {

std::string result_path(const std::string& name) {
  return temp_dir() + "/kernel_trial_" + name + ".json";
}

nlohmann::json read_result(const std::string& path) {
  const std::string text = read_file(path);
  return text.empty() ? nlohmann::json() : nlohmann::json::parse(text);
}

// CPU builds: float32 op names and no fused variant (tests/gpu/kernel_trial_gpu_test.cpp covers
// CUDA).
#if !SPEEDGATE_WITH_CUDA
TEST(KernelTrial, TimesThePlainVariantOnEveryOpOfEachFamily) {
  const std::map<std::string, std::vector<std::string>> ops = {
      {"ROPE", {"rope fp32"}},
      {"CAT", {"cat Float", "split fp32"}},
      {"ADALN",
       {"modulate fp32", "gated fp32+fp32", "bias fp32 [64]", "bias fp32 [256]"}},  // tiny: C = 64
      {"QKNORM", {"qknorm fp32", "qknorm+rope fp32"}}};
  for (const auto& [family, names] : ops) {
    const std::string path = result_path(family);
    const auto r = run_trainer("kernel-trial --workload wam --size tiny --micro-batch 2 --family " +
                               family + " --repeats 3 --warmup 1 --result " + path);
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    const auto j = read_result(path);
    EXPECT_EQ(j.at("protocol"), 1);
    EXPECT_EQ(j.at("kind"), "kernel_trial");
    EXPECT_EQ(j.at("status"), "ok");
    EXPECT_EQ(j.at("family"), family);
    EXPECT_EQ(j.at("micro_batch"), 2);
    EXPECT_EQ(j.at("repeats"), 3);
    EXPECT_EQ(j.at("ops").get<std::vector<std::string>>(), names) << family;
    // A CPU build has no fused variant: only plain, which matches itself.
    ASSERT_EQ(j.at("variants").size(), 1u) << family;
    const auto& plain = j.at("variants")[0];
    EXPECT_EQ(plain.at("params"), "plain");
    EXPECT_EQ(plain.at("variant"), "plain_aten");
    EXPECT_TRUE(plain.at("matches_plain").get<bool>());
    EXPECT_GT(plain.at("fwdbwd_us").get<double>(), 0.0);
    EXPECT_EQ(plain.at("ops").size(), names.size());
    EXPECT_TRUE(j.at("fingerprint").is_object());
  }
}

#endif

TEST(KernelTrial, ExplicitPlainVariantIsTimed) {
  const std::string path = result_path("explicit");
  const auto r = run_trainer(
      "kernel-trial --size tiny --family ROPE --variant plain --repeats 1 --result " + path);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(read_result(path).at("variants").size(), 1u);
}

TEST(KernelTrial, BadInputExitsTwoNamingItAndWritesNothing) {
  const std::map<std::string, std::string> cases = {
    {"--size tiny --family NOPE", "unknown kernel family 'NOPE'"},
    {"--size huge --family ROPE", "unknown size 'huge'"},
    {"--size tiny", "--family is required"},
    {"--family ROPE", "--size is required"},
    {"--workload lm --size tiny --family ROPE", "workload 'lm' has no kernel families"},
    {"--size tiny --family ROPE --repeats 0", "--repeats"},
#if !SPEEDGATE_WITH_CUDA
    {"--size tiny --family ROPE --variant threads=128", "no fused variant here"},
#endif
    {"--size tiny --family ROPE --bogus 1", "unknown flag --bogus"},
  };
  for (const auto& [args, message] : cases) {
    const std::string path = result_path("bad");
    std::filesystem::remove(path);
    const auto r = run_trainer("kernel-trial " + args + " --result " + path);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.stderr_text.find(message), std::string::npos) << args << ": " << r.stderr_text;
    EXPECT_FALSE(std::filesystem::exists(path)) << args;
  }
  const auto no_result = run_trainer("kernel-trial --size tiny --family ROPE");
  EXPECT_EQ(no_result.exit_code, 2);
  EXPECT_NE(no_result.stderr_text.find("--result PATH is required"), std::string::npos);
}

TEST(KernelTrial, ManifestSaysEveryFamilyCanBeTimed) {
  const auto m = describe();
  ASSERT_FALSE(m.at("kernel_families").empty());
  for (const auto& f : m.at("kernel_families")) {
    EXPECT_EQ(f.at("kernel_trial"), nlohmann::json::array({"wam"}))
        << f.at("name") << ": the workloads kernel-trial knows";
  }
}

}  // namespace
}  // namespace sg::trainer::testing
