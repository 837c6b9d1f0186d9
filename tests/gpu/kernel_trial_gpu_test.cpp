// `speedgate-train kernel-trial` on CUDA at wam base shapes: every legal variant of each
// family is timed next to plain, and each one's outputs and input grads are bitwise the
// plain variant's (the ranking the controller's `kernels` strategy trusts).
#include "kernels/common/registry.hpp"
#include "trainer/trainer_harness.hpp"

#include <gtest/gtest.h>

namespace sg::trainer::testing {
namespace {

TEST(GpuKernelTrial, EveryVariantIsTimedAndBitwisePlainAtBaseShapes) {
  for (const auto& fam : sg::kernels::families()) {
    const std::string path = temp_dir() + "/gpu_kernel_trial_" + fam.name + ".json";
    const auto r = run_trainer("kernel-trial --workload wam --size base --micro-batch 8 --family " +
                               fam.name + " --repeats 5 --warmup 2 --result " + path);
    ASSERT_EQ(r.exit_code, 0) << fam.name << ": " << r.stderr_text;
    const auto j = nlohmann::json::parse(read_file(path));
    EXPECT_EQ(j.at("status"), "ok");
    EXPECT_EQ(j.at("device").get<std::string>().rfind("cuda", 0), 0u);
    const auto legal = sg::kernels::legal_params(fam);
    ASSERT_EQ(j.at("variants").size(), legal.size() + 1)
        << fam.name << ": plain and every legal variant";
    for (const auto& v : j.at("variants")) {
      EXPECT_TRUE(v.at("matches_plain").get<bool>()) << fam.name << " " << v.at("params");
      EXPECT_GT(v.at("fwdbwd_us").get<double>(), 0.0);
    }
  }
}

}  // namespace
}  // namespace sg::trainer::testing
