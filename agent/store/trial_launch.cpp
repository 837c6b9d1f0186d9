#include "agent/store/trial_launch.hpp"

#include "agent/store/statement.hpp"

namespace sg::agent {

void set_trial_launch(Store& store, std::int64_t trial_id, const std::string& executor,
                      const std::string& slots, int world_size, const std::string& job_id) {
  write_exec(store,
             "UPDATE trials SET executor = COALESCE(NULLIF(?, ''), executor), slots = "
             "COALESCE(NULLIF(?, ''), slots), world_size = ?, job_id = COALESCE(NULLIF(?, ''), "
             "job_id) WHERE id = ?",
             executor, slots, world_size, job_id, trial_id);
}

std::string trial_job_id(Store& store, std::int64_t trial_id) {
  return query_one(store_detail::connection(store), "SELECT job_id FROM trials WHERE id = ?",
                   first_text, trial_id)
      .value_or(std::string());
}

}  // namespace sg::agent
