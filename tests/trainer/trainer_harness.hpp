// Runs the built speedgate-train binary (SPEEDGATE_BIN_DIR) as a subprocess, as the
// controller does, and reads its result file. Shared by the trainer's CPU tests.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace sg::trainer::testing {

struct TrainerRun {
  int exit_code = -1;
  std::string stderr_text;
  nlohmann::json result;  // null when no result file was written
};

inline std::string temp_dir() {
  static const std::string dir = [] {
    std::string tmpl = "/tmp/sg_trainer_test_XXXXXX";
    char* d = mkdtemp(tmpl.data());
    return std::string(d == nullptr ? "/tmp" : d);
  }();
  return dir;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs `speedgate-train <args>` with extra environment variables.
inline TrainerRun run_trainer(const std::string& args,
                              const std::map<std::string, std::string>& env = {}) {
  static int counter = 0;
  const std::string tag =
      temp_dir() + "/run" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  const std::string result_path = tag + ".json";
  const std::string err_path = tag + ".err";
  std::string cmd = "env";
  for (const auto& [k, v] : env) cmd += " " + k + "=" + shell_quote(v);
  cmd += " " + std::string(SPEEDGATE_BIN_DIR) + "/speedgate-train " + args;
  std::string full = cmd;
  if (args.rfind("run", 0) == 0) full += " --result " + result_path;
  full += " 2>" + err_path + " >" + tag + ".out";
  const int status = std::system(full.c_str());
  TrainerRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.stderr_text = read_file(err_path);
  const std::string text = read_file(result_path);
  if (!text.empty()) r.result = nlohmann::json::parse(text);
  return r;
}

// run_trainer for a successful reference run shared by many tests: ctest runs each test
// in its own process, so the result is kept on disk, keyed by the arguments and the
// binary's mtime and size (a rebuilt trainer never reuses an old baseline).
inline TrainerRun cached_run_trainer(const std::string& args) {
  const std::string bin = std::string(SPEEDGATE_BIN_DIR) + "/speedgate-train";
  struct stat st {};
  ::stat(bin.c_str(), &st);
  const std::string key =
      args + "|" + std::to_string(st.st_mtime) + "|" + std::to_string(st.st_size);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : key) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
  const std::string dir = "/tmp/sg_trainer_test_cache";
  ::mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/" + std::to_string(h) + ".json";
  const std::string text = read_file(path);
  if (!text.empty()) {
    TrainerRun r;
    r.exit_code = 0;
    r.result = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!r.result.is_discarded()) return r;
  }
  TrainerRun r = run_trainer(args);
  if (r.exit_code == 0) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    std::ofstream(tmp) << r.result.dump();
    std::rename(tmp.c_str(), path.c_str());
  }
  return r;
}

// `run` of a workload's tiny size: one thread, one warm-up step, one eval batch.
inline std::string tiny_run(int steps = 3, int micro = 2, int accum = 1, int seed = 0,
                            const char* workload = "wam") {
  return std::string("run --workload ") + workload + " --size tiny --steps " +
         std::to_string(steps) + " --seed " + std::to_string(seed) + " --micro-batch " +
         std::to_string(micro) + " --grad-accum " + std::to_string(accum) +
         " --threads 1 --warmup-steps 1 --eval-batches 1";
}

// The manifest `speedgate-train describe --json` prints.
inline nlohmann::json describe() {
  // describe prints to stdout, which run_trainer does not keep.
  const std::string out = temp_dir() + "/describe.json";
  const std::string cmd =
      std::string(SPEEDGATE_BIN_DIR) + "/speedgate-train describe --json > " + out;
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return nlohmann::json::parse(read_file(out));
}

inline std::string write_temp(const std::string& name, const std::string& content) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream(path) << content;
  return path;
}

// A named set of SG_* variables: the parameter of the switch-identity test suites.
struct EnvCase {
  const char* name;
  std::map<std::string, std::string> env;
};
inline std::string env_case_name(const ::testing::TestParamInfo<EnvCase>& info) {
  return info.param.name;
}

// Every step's loss and grad-norm bits, both digests and the eval loss bits are equal
// (what the gate's bitwise class demands of two results).
inline void expect_bitwise_equal(const nlohmann::json& a, const nlohmann::json& b) {
  ASSERT_EQ(a.at("status"), "ok");
  ASSERT_EQ(b.at("status"), "ok");
  ASSERT_EQ(a.at("step_records").size(), b.at("step_records").size());
  for (size_t i = 0; i < a.at("step_records").size(); ++i) {
    EXPECT_EQ(a["step_records"][i]["loss_bits"], b["step_records"][i]["loss_bits"]) << "step " << i;
    EXPECT_EQ(a["step_records"][i]["grad_norm_bits"], b["step_records"][i]["grad_norm_bits"])
        << "step " << i;
  }
  EXPECT_EQ(a.at("param_digest"), b.at("param_digest"));
  EXPECT_EQ(a.at("optimizer_digest"), b.at("optimizer_digest"));
  EXPECT_EQ(a.at("eval_loss_bits"), b.at("eval_loss_bits"));
}

// base (a run that must have succeeded) and a new run of `args` with `env`: the new one
// succeeds with base's bits (expect_bitwise_equal).
inline void expect_run_bitwise_equal(const TrainerRun& base, const std::string& args,
                                     const std::map<std::string, std::string>& env = {}) {
  ASSERT_EQ(base.exit_code, 0) << base.stderr_text;
  const auto run = run_trainer(args, env);
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  expect_bitwise_equal(base.result, run.result);
}

// Every step of result b has a finite loss and grad norm within the relative tolerances of
// a's, and b's eval loss is within loss_tol of a's.
inline void expect_steps_close(const nlohmann::json& a_result, const nlohmann::json& b_result,
                               double loss_tol, double grad_tol) {
  const auto& a = a_result.at("step_records");
  const auto& b = b_result.at("step_records");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const double la = a[i]["loss"].get<double>(), lb = b[i]["loss"].get<double>();
    const double ga = a[i]["grad_norm"].get<double>(), gb = b[i]["grad_norm"].get<double>();
    ASSERT_TRUE(std::isfinite(lb) && std::isfinite(gb));
    EXPECT_NEAR(lb / la, 1.0, loss_tol) << "loss, step " << i;
    EXPECT_NEAR(gb / ga, 1.0, grad_tol) << "grad norm, step " << i;
  }
  const double ea = a_result["eval_loss"].get<double>(), eb = b_result["eval_loss"].get<double>();
  EXPECT_NEAR(eb / ea, 1.0, loss_tol);
}

}  // namespace sg::trainer::testing
