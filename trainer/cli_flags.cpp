#include "trainer/cli_flags.hpp"

#include "trainer/errors.hpp"
#include "trainer/workload/workload.hpp"

#include <string>

namespace sg::trainer {
namespace {

// "wam, lm or lm_osft": the registered workloads.
std::string workload_choices() {
  std::string out;
  const auto& all = workloads();
  for (size_t i = 0; i < all.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + all[i].name;
  }
  return out;
}

}  // namespace

void add_run_options(CLI::App& run, RunOptions& o) {
  run.add_option("--workload", o.workload,
                 "workload: " + workload_choices() + " (docs/workloads.md)")
      ->capture_default_str();
  run.add_option("--size", o.size, "size of the workload (describe --json lists them)")
      ->capture_default_str();
  run.add_option("--steps", o.steps, "optimizer steps")->capture_default_str();
  run.add_option("--seed", o.seed, "seed of weights, data order and dropout")
      ->capture_default_str();
  run.add_option("--micro-batch", o.micro_batch,
                 "samples per rank and step (0 = the size's default)")
      ->capture_default_str();
  run.add_option("--grad-accum", o.grad_accum, "micro-batches accumulated per optimizer step")
      ->capture_default_str();
  run.add_option("--result", o.result_path,
                 "where to write the result JSON (required; written atomically)");
  run.add_option("--preset", o.preset_path,
                 "preset file of SG_* switches (applied over the environment's)");
  run.add_option("--heartbeat", o.heartbeat_path, "file touched after every step (rank 0)");
  run.add_option("--threads", o.threads, "intra-op CPU threads")->capture_default_str();
  run.add_option("--warmup-steps", o.warmup_steps, "first steps left out of samples/s")
      ->capture_default_str();
  run.add_option("--eval-batches", o.eval_batches, "held-out batches evaluated after training")
      ->capture_default_str();
  run.add_option(
         "--perturb", o.perturb,
         "before step 0 multiply every trainable parameter element by 1+EPS*(+-1), signs seeded by "
         "--seed (0 = off; measures the rounding band, docs/protocol.md)")
      ->capture_default_str();
}

void check_run_options(const RunOptions& o) {
  if (o.result_path.empty()) throw BadInputError("--result PATH is required");
  if (o.micro_batch < 0 || o.steps < 1 || o.grad_accum < 1 || o.warmup_steps < 0 ||
      o.eval_batches < 0) {
    throw BadInputError(
        "--steps/--grad-accum must be >= 1, --micro-batch/--warmup-steps/--eval-batches >= 0");
  }
  if (o.threads < 1)
    throw BadInputError("--threads must be >= 1, got " + std::to_string(o.threads));
  if (!(o.perturb >= 0 && o.perturb < 1)) {
    throw BadInputError("--perturb must be >= 0 and < 1, got " + std::to_string(o.perturb));
  }
}

}  // namespace sg::trainer
