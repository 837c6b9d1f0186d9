// scripts/install-deps.sh (issue 29 item 3): a bad option is a usage error before
// anything is installed, and after it runs no daemon the test group brings (munge,
// slurmd, slurmctld, prometheus) is left enabled at boot. Runs only where every package
// is already present (it never reaches apt then), as on CI after scripts/test.sh.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "integration/run_command.hpp"

namespace sg::test {
namespace {

const std::string kScript = std::string(SPEEDGATE_SOURCE_DIR) + "/scripts/install-deps.sh";
const char* const kServices[] = {"munge", "slurmd", "slurmctld", "prometheus"};

TEST(InstallDeps, UnknownOptionIsAUsageError) {
  const auto r = run_command("bash " + kScript + " --tests 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown option --tests"), std::string::npos) << r.out;
}

TEST(InstallDeps, NoServiceLeftEnabled) {
  for (const char* s : kServices) {
    if (run_command(std::string("dpkg-query -W -f='${Status}' ") + s +
                    " | grep -q 'install ok installed'")
            .exit_code != 0) {
      GTEST_SKIP()
          << s
          << " is not installed: the script would need apt (scripts/test.sh runs it with --test)";
    }
  }
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to disable services";
  const auto r = run_command("bash " + kScript + " --test 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_NE(r.out.find("all Debian packages present"), std::string::npos) << "reached apt:\n"
                                                                          << r.out;
  const bool systemd = std::filesystem::is_directory("/run/systemd/system");
  for (const char* s : kServices) {
    if (systemd) {
      EXPECT_NE(run_command(std::string("systemctl is-enabled --quiet ") + s).exit_code, 0)
          << s << " enabled";
      EXPECT_NE(run_command(std::string("systemctl is-active --quiet ") + s).exit_code, 0)
          << s << " running";
    } else {
      const auto links = run_command(
          std::string("ls /etc/rc2.d /etc/rc3.d /etc/rc4.d /etc/rc5.d | grep -E '^S[0-9]+") + s +
          "$'");
      EXPECT_EQ(links.out, "") << s << " still starts at boot";
    }
  }
}

}  // namespace
}  // namespace sg::test
