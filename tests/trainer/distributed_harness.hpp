// Launches W speedgate-train ranks at once on this host, torchrun-style (RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT = a free port), and collects
// every rank's exit code and stderr plus rank 0's result file. Shared by the CPU (Gloo)
// and GPU (NCCL) distributed tests.
#pragma once

#include "trainer/trainer_harness.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <vector>

namespace sg::trainer::testing {

struct RanksRun {
  std::vector<int> exit_codes;  // per rank; 128 + signal when killed by one
  std::vector<std::string> stderr_texts;
  nlohmann::json result;           // rank 0's result file; null when none
  std::vector<bool> wrote_result;  // per rank: whether its own result path exists
};

// A TCP port nobody listens on right now (bind to port 0, read it back, release it).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Runs `speedgate-train <args>` as `world` ranks; each rank gets its own --result path so
// the test can check that only rank 0 writes one. Every rank runs under `timeout
// <bound_s>` so a hung rank shows up as exit 124 instead of hanging the test.
inline RanksRun run_ranks(int world, const std::string& args,
                          const std::map<std::string, std::string>& env = {}, int bound_s = 600) {
  static int counter = 0;
  const std::string tag =
      temp_dir() + "/ranks" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  const int port = free_port();
  std::string script = "ulimit -c 0; ";
  for (int r = 0; r < world; ++r) {
    const std::string base = tag + ".r" + std::to_string(r);
    std::string cmd = "env RANK=" + std::to_string(r) + " WORLD_SIZE=" + std::to_string(world) +
                      " LOCAL_RANK=" + std::to_string(r) +
                      " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port);
    for (const auto& [k, v] : env) cmd += " " + k + "=" + shell_quote(v);
    cmd += " timeout -s KILL " + std::to_string(bound_s) + " " + std::string(SPEEDGATE_BIN_DIR) +
           "/speedgate-train " + args + " --result " + base + ".json 2>" + base + ".err >" + base +
           ".out";
    script += "( " + cmd + "; echo $? >" + base + ".rc ) & ";
  }
  script += "wait";
  std::system(("sh -c " + shell_quote(script)).c_str());
  RanksRun out;
  for (int r = 0; r < world; ++r) {
    const std::string base = tag + ".r" + std::to_string(r);
    const std::string rc = read_file(base + ".rc");
    out.exit_codes.push_back(rc.empty() ? -1 : std::stoi(rc));
    out.stderr_texts.push_back(read_file(base + ".err"));
    const std::string text = read_file(base + ".json");
    out.wrote_result.push_back(!text.empty());
    if (r == 0 && !text.empty()) out.result = nlohmann::json::parse(text);
  }
  return out;
}

// Two data-parallel runs are bitwise the same training (expect_bitwise_equal: status,
// every step's bits, both digests, eval loss bits) and every rank ends with the same
// parameters in both.
inline void expect_bitwise_ranks(const nlohmann::json& a, const nlohmann::json& b) {
  expect_bitwise_equal(a, b);
  EXPECT_EQ(a.at("rank_param_digests"), b.at("rank_param_digests"));
}

}  // namespace sg::trainer::testing
