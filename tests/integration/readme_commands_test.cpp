// Every line of README.md's "Everyday commands" runs as written (issue 29 item 2): in a
// scratch directory laid out like the repository root (build/ linked, the committed
// presets/ copied), one after another, so the first campaigns are the tiny DB the later
// lines read. The one rewrite, so that CI stays short: a campaign's time budget becomes
// a few trainer runs (kBudgetRewrites). `serve` runs until stopped: it must still be
// serving after 3 s. Lines ending in "\" continue on the next. Nothing is skipped: no
// line of that section needs a GPU or torchrun (its two-rank example runs on Gloo).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "integration/run_command.hpp"

namespace sg::test {
namespace {

namespace fs = std::filesystem;

const std::vector<std::pair<std::string, std::string>> kBudgetRewrites = {
    {"tune --workload wam --size tiny --budget-minutes 10",
     "tune --workload wam --size tiny --budget-trials 24 --noise-pairs 2"},
    {"tune --workload lm --size tiny --budget-minutes 10",
     "tune --workload lm --size tiny --budget-trials 20 --noise-pairs 2"},
    {"nightly --budget-minutes 60", "nightly --budget-minutes 0.5"},
};

std::vector<std::string> everyday_commands() {
  std::ifstream in(std::string(SPEEDGATE_SOURCE_DIR) + "/README.md");
  std::vector<std::string> lines;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == "## Everyday commands";
    if (!inside || line.rfind("    ", 0) != 0) continue;
    const bool continued = !lines.empty() && !lines.back().empty() && lines.back().back() == '\\';
    if (continued) lines.back().back() = ' ';  // a "\" line end: one shell line
    if (continued)
      lines.back() += line.substr(4);
    else
      lines.push_back(line.substr(4));
  }
  return lines;
}

// The command without its trailing "  # comment".
std::string command_of(const std::string& line) {
  const auto hash = line.find("  #");
  std::string c = line.substr(0, hash);
  while (!c.empty() && c.back() == ' ') c.pop_back();
  return c;
}

TEST(ReadmeCommands, EverydayCommandsRunAsWritten) {
  const auto lines = everyday_commands();
  ASSERT_GE(lines.size(), 10u) << "README.md lost its Everyday commands block";
  char tmpl[] = "/tmp/sg_readme_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path root = tmpl;
  fs::create_directory_symlink(fs::path(SPEEDGATE_BIN_DIR).parent_path(), root / "build");
  fs::copy(fs::path(SPEEDGATE_SOURCE_DIR) / "presets", root / "presets",
           fs::copy_options::recursive);
  for (const auto& line : lines) {
    std::string cmd = command_of(line);
    for (const auto& [from, to] : kBudgetRewrites) {
      if (const auto at = cmd.find(from); at != std::string::npos) cmd.replace(at, from.size(), to);
    }
    const bool serves = cmd.find("speedgate serve") != std::string::npos;
    const std::string shell = "cd '" + root.string() + "' && " + (serves ? "timeout 3 " : "") +
                              "sh -c '" + cmd + "' 2>&1";
    const auto r = run_command(shell);
    const bool campaign =
        cmd.find(" tune ") != std::string::npos || cmd.find(" nightly ") != std::string::npos;
    if (serves) {
      EXPECT_EQ(r.exit_code, 124) << cmd << " stopped serving:\n" << r.out;
    } else if (campaign) {
      EXPECT_LE(r.exit_code, 1)
          << cmd << ": exit 1 is a result (a budget without a preset), 2 a usage error\n"
          << r.out;
    } else {
      EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.out;
    }
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace sg::test
