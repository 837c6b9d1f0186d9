// speedgate-train: the reference trainer of the speedgate protocol (docs/protocol.md).
//   speedgate-train describe --json | run ... | kernel-trial ...   (--help at every level)
// Exit codes: 0 ok, 2 usage/bad input, 3 out of memory, 4 non-finite loss, 1 crash.
// Distributed runs (WORLD_SIZE > 1, torchrun's variables; docs/protocol.md "Distributed
// runs"): every rank runs this; rank 0 alone writes the result file and the heartbeat.
#include "common/suggest/cli_suggest.hpp"
#include "common/suggest/suggest.hpp"
#include "trainer/cli_flags.hpp"
#include "trainer/errors.hpp"
#include "trainer/kernel_trial.hpp"
#include "trainer/manifest.hpp"
#include "trainer/result/run_result.hpp"
#include "trainer/runtime/memory_tracker.hpp"
#include "trainer/runtime/runtime.hpp"
#include "trainer/switches/switch_config.hpp"
#include "trainer/train_loop.hpp"
#include "trainer/workload/workload.hpp"

#include <iostream>
#include <string>

namespace {

using namespace sg::trainer;

constexpr int kExitOk = 0;
constexpr int kExitCrash = 1;
constexpr int kExitUsage = 2;
constexpr int kExitOom = 3;
constexpr int kExitNonFinite = 4;

// Below every --help: what the flags cannot say.
constexpr const char* kFooter =
    "Switches come from SG_* environment variables or --preset (see describe --json); a switch\n"
    "set to a non-default value must apply to the workload (its manifest 'workloads').\n"
    "Distributed: one process per rank with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,\n"
    "MASTER_PORT set as torchrun does (or SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID under srun);\n"
    "rank 0 writes the result. SPEEDGATE_DIST_TIMEOUT_S bounds every collective (default 300).\n"
    "Exit codes: 0 ok, 1 crash, 2 usage or bad input, 3 out of memory, 4 non-finite loss.";

void write_result(const RunOptions& o, const RunResult& r) {
  write_file_atomically(o.result_path, to_json(r).dump(2) + "\n");
}

int run_command(RunOptions opt) {
  install_cpu_memory_tracker();
  Switches sw;
  Runtime rt;
  try {
    check_run_options(opt);
    sw = resolve_switches(sg_environment(), opt.preset_path);
    validate_run_target(opt, sw);
    rt = setup_runtime(opt.threads, sw);
    if (rt.world_size > 1 && !workload_named(opt.workload).data_parallel) {
      throw BadInputError("workload '" + opt.workload +
                          "' does not run distributed yet (WORLD_SIZE > 1 needs " +
                          sg::join_names(workload_names_with(&Workload::data_parallel)) + ")");
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
  if (code != kExitOk)
    std::cerr << "speedgate-train" << who << ": " << r.status << ": " << r.error << "\n";
  // Rank 0 alone reports; bad input (exit 2) writes nothing.
  if (rt.rank != 0 || code == kExitUsage) return code;
  for (const auto& s : r.step_records) {
    std::cerr << "step " << s.step << " loss " << s.loss << " grad_norm " << s.grad_norm << " "
              << s.seconds << "s\n";
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
  CLI::App app{
      "speedgate-train: the reference trainer of the speedgate protocol (docs/protocol.md)."};
  app.set_version_flag("--version", [] {
    const auto m = build_manifest();
    return "speedgate-train " + m.at("version").get<std::string>() + " (" +
           m.at("build").at("git_sha").get<std::string>() + ", torch " +
           m.at("build").at("torch").get<std::string>() +
           (m.at("build").at("cuda").get<bool>() ? ", CUDA)" : ", CPU)");
  });
  app.require_subcommand(1);
  app.footer(kFooter);
  app.option_defaults()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);  // a repeated flag: the last counts
  bool json = false;
  CLI::App* describe =
      app.add_subcommand("describe", "print the manifest: switches, workloads, kernel families");
  describe->add_flag("--json", json, "as JSON on stdout (the only format; required)");
  RunOptions run_opt;
  CLI::App* run = app.add_subcommand(
      "run", "train, then write the result file (losses, digests, memory, speed)");
  add_run_options(*run, run_opt);
  KernelTrialOptions kt_opt;
  CLI::App* kt =
      app.add_subcommand("kernel-trial", "time a kernel family's variants on one wam layer");
  add_kernel_trial_options(*kt, kt_opt);
  for (CLI::App* sub : {describe, run, kt}) sub->footer(kFooter);

  if (argc == 2 && std::string(argv[1]) == "help") {
    std::cout << app.help();
    return kExitOk;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "speedgate-train: " << sg::explain_cli_error(app, argc, argv, e.what()) << "\n";
    return kExitUsage;
  }
  try {
    if (describe->parsed()) {
      if (!json) {
        std::cerr << "speedgate-train: describe needs --json (the only format)\n";
        return kExitUsage;
      }
      std::cout << build_manifest().dump(2) << "\n";
      return kExitOk;
    }
    if (run->parsed()) return run_command(run_opt);
    return kernel_trial_command(kt_opt);
  } catch (const std::exception& e) {
    std::cerr << "speedgate-train: crash: " << e.what() << "\n";
    return kExitCrash;
  }
}
