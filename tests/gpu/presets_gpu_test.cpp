// The committed presets run for real on the GPU (label gpu): speedgate-train reads every
// switch of presets/fast.env and presets/fast_80gb.env (including the CUDA-only ones the
// CPU test CommittedPresets.EverySwitchIsReadByTheTrainer cannot resolve) and trains
// wam `small` with them: exit 0, and the result's resolved switches hold the preset's values.
#include "trainer/trainer_harness.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

TEST(GpuPresets, CommittedPresetsRunOnTheGpu) {
  const std::filesystem::path dir = std::filesystem::path(SPEEDGATE_SOURCE_DIR) / "presets";
  int checked = 0;
  for (const char* name : {"fast.env", "fast_80gb.env"}) {
    const std::string preset = (dir / name).string();
    if (!std::filesystem::exists(preset)) continue;
    SCOPED_TRACE(preset);
    const auto run = sg::trainer::testing::run_trainer(
        "run --workload wam --size small --steps 2 --seed 0 --micro-batch 2 --grad-accum 1 "
        "--warmup-steps 1"
        " --eval-batches 0 --preset " +
        preset);
    ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
    ASSERT_TRUE(run.result.is_object()) << "no result file";
    const auto& result = run.result;
    std::ifstream in(preset);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const auto eq = line.find('=');
      ASSERT_NE(eq, std::string::npos) << line;
      EXPECT_EQ(result.at("switches").at(line.substr(0, eq)).get<std::string>(),
                line.substr(eq + 1))
          << line;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2) << "presets/fast.env and presets/fast_80gb.env are committed";
}

}  // namespace
