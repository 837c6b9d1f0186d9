// The registered workload interface: one entry per --workload name, with what describe
// --json reports of it, what `run` checks before any work and its training loop. main,
// the manifest and run validation iterate the registry (registry.cpp) instead of naming
// workloads; docs/workloads.md "Adding a workload" is the recipe.
#pragma once

#include "trainer/result/run_result.hpp"
#include "trainer/runtime/runtime.hpp"
#include "trainer/switches/switch_table.hpp"
#include "trainer/switches/switches.hpp"
#include "trainer/train_loop.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sg::trainer {

// One size of a workload as the manifest reports it (docs/protocol.md section 1).
struct WorkloadSize {
  std::string name;
  int64_t trainable_params = 0;
  int64_t frozen_params = 0;
  double model_flops_per_sample = 0;
  std::optional<double> model_flops_per_token;  // reported by token-based workloads only
  int64_t tokens_per_sample = 0;
  int64_t default_micro_batch = 1;
};

struct Workload {
  std::string name;  // the --workload value
  // Its sizes in manifest order, with the analytic counts.
  std::vector<WorkloadSize> (*sizes)() = nullptr;
  // Throws BadInputError naming the size and the known ones when `size` is not one.
  void (*check_size)(const std::string& size) = nullptr;
  // The scopes of the switches its code reads; any other switch set to a non-default
  // value is refused before the run starts.
  std::vector<SwitchScope> reads;
  // Runs data-parallel (WORLD_SIZE > 1); otherwise such a run is refused.
  bool data_parallel = false;
  // `kernel-trial` times kernel families at its shapes (protocol §5).
  bool kernel_trial = false;
  // The training loop; run_training's contract (train_loop.hpp).
  void (*run)(const RunOptions& opt, const Switches& sw, const Runtime& rt,
              RunResult& result) = nullptr;

  bool reads_switch(const SwitchSpec& s) const;
};

// Every workload, in registration order (the manifest's order).
const std::vector<Workload>& workloads();
// nullptr when no workload has this name.
const Workload* find_workload(const std::string& name);
// Throws BadInputError naming the unknown workload, the closest name and the known ones.
const Workload& workload_named(const std::string& name);
// Names of the workloads that read `s`, in registration order.
std::vector<std::string> workload_names_reading(const SwitchSpec& s);
// Names of the workloads for which `flag` holds ("wam" for &Workload::data_parallel).
std::vector<std::string> workload_names_with(bool Workload::*flag);
// Throws BadInputError naming the switch when one set to a non-default value (or a kernel
// family variable) is not read by `w` (check_switches_apply in switch_config.hpp).
void check_switches_read(const Switches& sw, const Workload& w);

}  // namespace sg::trainer
