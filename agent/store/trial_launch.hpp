// Where a trial runs (schema v3, docs/controller.md "Executors"): the executor, the
// slots it held (GPU ids, CPU slot or Slurm node list), its rank count and its Slurm job
// id, recorded at submission so a resumed campaign can scancel a dead controller's job.
#pragma once
#include <cstdint>
#include <string>

#include "agent/store/store.hpp"

namespace sg::agent {

// Empty strings leave a column as it is.
void set_trial_launch(Store& store, std::int64_t trial_id, const std::string& executor,
                      const std::string& slots, int world_size, const std::string& job_id);
// "" when the trial has no job id.
std::string trial_job_id(Store& store, std::int64_t trial_id);

}  // namespace sg::agent
