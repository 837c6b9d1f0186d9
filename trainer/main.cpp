// speedgate-train: the reference trainer of the speedgate protocol (docs/protocol.md).
//   speedgate-train describe --json
//   speedgate-train run --workload W --size S --steps N --seed S --micro-batch B
//                       --grad-accum G --result PATH [--preset FILE] [--heartbeat PATH]
//                       [--threads T] [--warmup-steps K] [--eval-batches E]
//   speedgate-train kernel-trial --workload wam --size S --micro-batch B --family F
//                       --result PATH [--variant PARAMS ...] [--repeats N] [--warmup K]
// Exit codes: 0 ok, 2 usage/bad input, 3 out of memory, 4 non-finite loss, 1 crash.
// Distributed runs (WORLD_SIZE > 1, torchrun's variables; docs/protocol.md "Distributed
// runs"): every rank runs this; rank 0 alone writes the result file and the heartbeat.
#include "trainer/cli_flags.hpp"
#include "trainer/errors.hpp"
#include "trainer/kernel_trial.hpp"
#include "trainer/manifest.hpp"
#include "trainer/model/wam_config.hpp"
#include "trainer/result/run_result.hpp"
#include "trainer/runtime/memory_tracker.hpp"
#include "trainer/runtime/runtime.hpp"
#include "trainer/switches/switch_config.hpp"
#include "trainer/train_loop.hpp"

#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace sg::trainer;

constexpr int kExitOk = 0;
constexpr int kExitCrash = 1;
constexpr int kExitUsage = 2;
constexpr int kExitOom = 3;
constexpr int kExitNonFinite = 4;

constexpr const char* kUsage =
    "usage: speedgate-train describe --json\n"
    "       speedgate-train run --workload wam|lm|lm_osft --size S --steps N --seed S\n"
    "                           --micro-batch B --grad-accum G --result PATH [--preset FILE]\n"
    "                           [--heartbeat PATH] [--threads T] [--warmup-steps K] [--eval-batches E]\n"
    "       speedgate-train kernel-trial --workload wam --size S --micro-batch B --family F --result PATH\n"
    "                           [--variant plain|PARAMS ...] [--repeats N] [--warmup K] [--threads T]\n"
    "                           [--heartbeat PATH]   (times a kernel family's variants; docs/protocol.md)\n"
    "Sizes: wam tiny|small|base|wam5b; lm and lm_osft tiny|small|1b|3b (docs/workloads.md).\n"
    "Switches come from SG_* environment variables or --preset (see describe --json); a switch\n"
    "set to a non-default value must apply to the workload (its manifest 'workloads').\n"
    "Distributed: one process per rank with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,\n"
    "MASTER_PORT set as torchrun does (or SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID under srun);\n"
    "rank 0 writes the result. SPEEDGATE_DIST_TIMEOUT_S bounds every collective (default 300).\n";

RunOptions parse_run(const std::vector<std::string>& args) {
  std::map<std::string, std::string> flags;
  for (auto& [name, value] : parse_flags(args)) flags[name] = value;  // the last one counts
  RunOptions o;
  for (const auto& [name, v] : flags) {
    if (name == "workload") o.workload = v;
    else if (name == "size") o.size = v;
    else if (name == "steps") o.steps = to_int(name, v);
    else if (name == "seed") o.seed = to_int(name, v);
    else if (name == "micro-batch") o.micro_batch = to_int(name, v);
    else if (name == "grad-accum") o.grad_accum = to_int(name, v);
    else if (name == "result") o.result_path = v;
    else if (name == "preset") o.preset_path = v;
    else if (name == "heartbeat") o.heartbeat_path = v;
    else if (name == "threads") o.threads = static_cast<int>(to_int(name, v));
    else if (name == "warmup-steps") o.warmup_steps = to_int(name, v);
    else if (name == "eval-batches") o.eval_batches = to_int(name, v);
    else throw BadInputError("unknown flag --" + name);
  }
  if (o.result_path.empty()) throw BadInputError("--result PATH is required");
  if (o.micro_batch < 0 || o.steps < 1 || o.grad_accum < 1 || o.warmup_steps < 0 || o.eval_batches < 0) {
    throw BadInputError("--steps/--grad-accum must be >= 1, --micro-batch/--warmup-steps/--eval-batches >= 0");
  }
  return o;
}

void write_result(const RunOptions& o, const RunResult& r) {
  write_file_atomically(o.result_path, to_json(r).dump(2) + "\n");
}

int run_command(const std::vector<std::string>& args) {
  install_cpu_memory_tracker();
  RunOptions opt;
  Switches sw;
  Runtime rt;
  try {
    opt = parse_run(args);
    sw = resolve_switches(sg_environment(), opt.preset_path);
    validate_run_target(opt, sw);
    rt = setup_runtime(opt.threads, sw);
    if (rt.world_size > 1 && opt.workload != "wam") {
      throw BadInputError("workload '" + opt.workload + "' does not run distributed yet (WORLD_SIZE > 1 needs wam)");
    }
  } catch (const BadInputError& e) {
    std::cerr << "speedgate-train: " << e.what() << "\n";
    return kExitUsage;
  }
  if (rt.rank != 0) opt.heartbeat_path.clear();
  RunResult r;
  int code = kExitOk;
  try {
    connect_distributed(rt);
    run_training(opt, sw, rt, r);
  } catch (const BadInputError& e) {
    r.status = "error", r.error = e.what(), code = kExitUsage;
  } catch (const NonFiniteError& e) {
    r.status = "nan", r.error = e.what(), code = kExitNonFinite;
  } catch (const std::exception& e) {
    const bool oom = is_out_of_memory(e);
    r.status = oom ? "oom" : "error";
    r.error = e.what();
    code = oom ? kExitOom : kExitCrash;
  }
  const std::string who = rt.world_size > 1 ? " rank " + std::to_string(rt.rank) : "";
  if (code != kExitOk) std::cerr << "speedgate-train" << who << ": " << r.status << ": " << r.error << "\n";
  // Rank 0 alone reports; bad input (exit 2) writes nothing.
  if (rt.rank != 0 || code == kExitUsage) return code;
  for (const auto& s : r.step_records) {
    std::cerr << "step " << s.step << " loss " << s.loss << " grad_norm " << s.grad_norm << " " << s.seconds << "s\n";
  }
  try {
    write_result(opt, r);
  } catch (const std::exception& e) {
    std::cerr << "speedgate-train: cannot write result: " << e.what() << "\n";
    return code == kExitOk ? kExitCrash : code;
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "describe") {
      if (args.size() != 1 || args[0] != "--json") {
        std::cerr << "speedgate-train: describe needs --json\n" << kUsage;
        return kExitUsage;
      }
      std::cout << build_manifest().dump(2) << "\n";
      return kExitOk;
    }
    if (command == "run") return run_command(args);
    if (command == "kernel-trial") return kernel_trial_command(args);
  } catch (const std::exception& e) {
    std::cerr << "speedgate-train: crash: " << e.what() << "\n";
    return kExitCrash;
  }
  std::cerr << "speedgate-train: unknown command '" << command << "'\n" << kUsage;
  return kExitUsage;
}
