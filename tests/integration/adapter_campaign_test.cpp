// The controller tunes a trainer it did not write: a small campaign against the Python
// example in examples/pytorch_adapter (Debian's python3-torch) emits presets that
// validate against that trainer's own manifest.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "integration/run_command.hpp"

namespace sg::test {
namespace {

namespace fs = std::filesystem;

using AdapterCampaign = AdapterTrainerTest;

TEST_F(AdapterCampaign, TuneAPythonTrainerAndEmitPresets) {
  const std::string db = (dir_ / "store.db").string();
  const std::string presets = (dir_ / "presets").string();

  const auto tune =
      run_command(bin("speedgate") + " tune --workload cnn --size tiny --db " + db + " --trainer " +
                  trainer_ + " --budget-trials 40 --steps 4 --plan screen,greedy --presets-out " +
                  presets + " --json 2>" + (dir_ / "tune.log").string());
  ASSERT_EQ(tune.exit_code, 0) << tune.out
                               << run_command("tail -40 " + (dir_ / "tune.log").string()).out;
  const auto summary = nlohmann::json::parse(tune.out);
  EXPECT_FALSE(summary.empty());

  const auto manifest = nlohmann::json::parse(run_command(trainer_ + " describe --json").out);
  std::set<std::string> envs;
  for (const auto& sw : manifest.at("switches")) envs.insert(sw.at("env").get<std::string>());
  for (const char* name : {"fast.env", "fast_80gb.env"}) {
    const fs::path file = fs::path(presets) / name;
    ASSERT_TRUE(fs::exists(file)) << file;
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      EXPECT_TRUE(envs.count(line.substr(0, line.find('='))))
          << "not the adapter's switch: " << line;
    }
    const auto check = run_command(bin("speedgate") + " presets check " + file.string() +
                                   " --trainer " + trainer_ + " 2>&1");
    EXPECT_EQ(check.exit_code, 0) << check.out;
  }
  EXPECT_TRUE(fs::exists(fs::path(presets) / "README.md"));
}

}  // namespace
}  // namespace sg::test
