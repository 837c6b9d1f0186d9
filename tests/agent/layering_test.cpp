// The controller's layers (docs/architecture.md): each includes only layers above it. The
// checks read the source tree's #include lines; a test fails naming the offending line.
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

// "path:line: text" of every #include in the sources under `dir` naming one of `targets`
// (folders relative to the source tree, e.g. "agent/runner").
std::vector<std::string> includes_of(const std::string& dir,
                                     const std::vector<std::string>& targets) {
  const fs::path root(SPEEDGATE_SOURCE_DIR);
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu")) continue;
    std::ifstream in(e.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.rfind("#include \"", 0) != 0) continue;
      for (const auto& t : targets) {
        if (line.find("\"" + t + "/") != std::string::npos) {
          found.push_back(fs::relative(e.path(), root).generic_string() + ":" + std::to_string(n) +
                          ": " + line);
        }
      }
    }
  }
  return found;
}

const std::vector<std::string> kAboveProtocol = {
    "agent/gate",      "agent/memory",  "agent/runner",   "agent/store",   "agent/ranking",
    "agent/trial",     "agent/search",  "agent/campaign", "agent/presets", "agent/report",
    "agent/dashboard", "agent/nightly", "agent/cli"};

TEST(Layering, ProtocolIncludesOnlyCommon) {
  const auto found = includes_of("agent/protocol", kAboveProtocol);
  EXPECT_TRUE(found.empty()) << found.front();
}

TEST(Layering, GateAndMemoryLaunchNothing) {
  for (const char* dir : {"agent/gate", "agent/memory"}) {
    const auto found = includes_of(dir, {"agent/runner", "agent/store", "agent/trial",
                                         "agent/search", "agent/campaign", "agent/cli"});
    EXPECT_TRUE(found.empty()) << found.front();
  }
}

TEST(Layering, SearchRunsNothingItself) {
  // Strategies reach trials through the evaluator, never an executor or a campaign.
  const auto found = includes_of("agent/search", {"agent/runner", "agent/trial", "agent/campaign",
                                                  "agent/presets", "agent/cli"});
  EXPECT_TRUE(found.empty()) << found.front();
}

TEST(Layering, ControllerAndTrainerNeverIncludeEachOther) {
  auto found = includes_of("agent", {"trainer", "kernels"});
  EXPECT_TRUE(found.empty()) << found.front();
  found = includes_of("trainer", {"agent"});
  EXPECT_TRUE(found.empty()) << found.front();
}

TEST(Layering, TheCheckSeesIncludes) {
  // Not vacuous: the campaign does include the trial service.
  EXPECT_FALSE(includes_of("agent/campaign", {"agent/trial"}).empty());
}

}  // namespace
