// Launcher environment contract (see launch_env.hpp).
#include "trainer/distributed/launch_env.hpp"

#include "trainer/errors.hpp"

#include <cstdlib>

namespace sg::trainer {
namespace {

bool is_set(const char* v) { return v != nullptr && *v != '\0'; }

int parse_int(const char* name, const char* v) {
  try {
    size_t used = 0;
    const long n = std::stol(v, &used);
    if (used != std::string(v).size()) throw std::invalid_argument(v);
    return static_cast<int>(n);
  } catch (const std::exception&) {
    throw BadInputError(std::string("bad value of ") + name + ": '" + v + "' (needs an integer)");
  }
}

}  // namespace

LaunchEnv read_launch_env(const std::function<const char*(const char*)>& get) {
  LaunchEnv e;
  const bool torchrun = is_set(get("RANK"));
  const bool slurm = !torchrun && is_set(get("SLURM_PROCID"));
  const char* rank_var = slurm ? "SLURM_PROCID" : "RANK";
  const char* world_var = slurm ? "SLURM_NTASKS" : "WORLD_SIZE";
  const char* local_var = slurm ? "SLURM_LOCALID" : "LOCAL_RANK";
  e.source = torchrun ? "torchrun" : slurm ? "slurm" : "none";
  if (is_set(get(rank_var))) e.rank = parse_int(rank_var, get(rank_var));
  if (is_set(get(world_var))) e.world_size = parse_int(world_var, get(world_var));
  if (is_set(get(local_var))) e.local_rank = parse_int(local_var, get(local_var));
  if (e.world_size < 1) throw BadInputError(std::string(world_var) + " must be >= 1");
  if (e.rank < 0 || e.rank >= e.world_size) {
    throw BadInputError(std::string(rank_var) + "=" + std::to_string(e.rank) + " is outside [0, " +
                        world_var + "=" + std::to_string(e.world_size) + ")");
  }
  if (e.local_rank < 0) throw BadInputError(std::string(local_var) + " must be >= 0");
  if (is_set(get("SPEEDGATE_DIST_TIMEOUT_S"))) {
    e.timeout_s = parse_int("SPEEDGATE_DIST_TIMEOUT_S", get("SPEEDGATE_DIST_TIMEOUT_S"));
    if (e.timeout_s < 1) throw BadInputError("SPEEDGATE_DIST_TIMEOUT_S must be >= 1");
  }
  if (!e.distributed()) return e;
  if (!is_set(get("MASTER_ADDR")))
    throw BadInputError("MASTER_ADDR is required when " + std::string(world_var) + " > 1");
  if (!is_set(get("MASTER_PORT")))
    throw BadInputError("MASTER_PORT is required when " + std::string(world_var) + " > 1");
  e.master_addr = get("MASTER_ADDR");
  e.master_port = parse_int("MASTER_PORT", get("MASTER_PORT"));
  if (e.master_port < 1 || e.master_port > 65535)
    throw BadInputError("MASTER_PORT must be in 1..65535");
  return e;
}

LaunchEnv launch_env_from_process() {
  return read_launch_env([](const char* name) { return std::getenv(name); });
}

}  // namespace sg::trainer
