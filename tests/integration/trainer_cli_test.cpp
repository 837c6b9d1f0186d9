// speedgate-train's command line (CLI11, like speedgate): --help at every level with
// defaults, --version, exit 2 for usage errors naming the bad flag or command and the
// closest existing ones; every run flag kept, --perturb added and range-checked.
#include <gtest/gtest.h>

#include "integration/run_command.hpp"

namespace sg::test {
namespace {

CommandResult trainer(const std::string& args) {
  return run_command(bin("speedgate-train") + " " + args + " 2>&1");
}

TEST(TrainerCli, HelpAtEveryLevelExitsZero) {
  for (const char* level :
       {"--help", "help", "describe --help", "run --help", "kernel-trial --help", "run -h"}) {
    const auto r = trainer(level);
    EXPECT_EQ(r.exit_code, 0) << level << ": " << r.out;
    EXPECT_NE(r.out.find("Exit codes: 0 ok, 1 crash, 2 usage"), std::string::npos)
        << level << ": " << r.out;
  }
}

TEST(TrainerCli, RunHelpListsEveryFlagWithItsDefault) {
  const auto r = trainer("run --help");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* flag :
       {"--workload", "--size", "--steps", "--seed", "--micro-batch", "--grad-accum", "--result",
        "--preset", "--heartbeat", "--threads", "--warmup-steps", "--eval-batches", "--perturb"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("=wam"), std::string::npos) << "defaults are shown:\n" << r.out;
  EXPECT_NE(r.out.find("=8"), std::string::npos) << r.out;
}

TEST(TrainerCli, VersionNamesTheBuild) {
  const auto r = trainer("--version");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("speedgate-train ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("torch "), std::string::npos) << r.out;
}

TEST(TrainerCli, UsageErrorsExitTwoAndSayWhatIsWrong) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "a command is required: describe, run, kernel-trial"},
      {"train", "unknown command 'train' (commands: describe, run, kernel-trial)"},
      {"rn --steps 2", "unknown command 'rn'; did you mean 'run'?"},
      {"run --stpes 2 --result /tmp/x.json", "unknown flag --stpes; did you mean '--steps'?"},
      {"run --steps notanumber --result /tmp/x.json", "--steps"},
      {"run --steps 2", "--result PATH is required"},
      {"run --perturb 1 --result /tmp/x.json", "--perturb must be >= 0 and < 1"},
      {"run --perturb -0.1 --result /tmp/x.json", "--perturb must be >= 0 and < 1"},
      {"describe", "describe needs --json"},
      {"kernel-trial --size tiny --family ROPE --bogus 1 --result /tmp/x.json",
       "unknown flag --bogus"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = trainer(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << args << ": " << r.out;
  }
}

}  // namespace
}  // namespace sg::test
