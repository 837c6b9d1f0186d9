// Runs a command line through /bin/sh for integration tests and captures its stdout and
// exit status. Test-only: the controller itself never goes through a shell.
#pragma once
#include <sys/wait.h>

#include <array>
#include <cstdio>
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

}  // namespace sg::test
