// Runs a command line through /bin/sh for integration tests and captures its stdout and
// exit status. Test-only: the controller itself never goes through a shell.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace sg::test {

struct CommandResult {
  int exit_code = -1;  // -1 when the command died by a signal
  std::string out;
};

inline CommandResult run_command(const std::string& command_line) {
  CommandResult result;
  FILE* pipe = ::popen(command_line.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) result.out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

inline std::string bin(const std::string& name) {
  return std::string(SPEEDGATE_BIN_DIR) + "/" + name;
}

// An empty dir `prefix`<pid> under the temp dir (emptied when it was there).
inline std::filesystem::path fresh_temp_dir(const std::string& prefix) {
  const auto dir = std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The Python example trainer (examples/pytorch_adapter), and whether Debian's python3-torch
// is there to run it (the failure says how to install it).
inline std::string adapter_trainer() {
  return std::string(SPEEDGATE_SOURCE_DIR) + "/examples/pytorch_adapter/train.py";
}
inline ::testing::AssertionResult python_has_torch() {
  if (run_command("/usr/bin/python3 -c 'import torch' 2>&1").exit_code == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "Debian's python3-torch is missing (scripts/install-deps.sh installs it)";
}

// A test of the Python example trainer: fails at once when python3-torch is missing; dir_
// is a fresh temp dir named after the test suite, removed when the test ends.
class AdapterTrainerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(python_has_torch()); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  const std::string trainer_ = adapter_trainer();
  const std::filesystem::path dir_ = fresh_temp_dir(
      std::string("sg-") +
      ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "-");
};

}  // namespace sg::test
