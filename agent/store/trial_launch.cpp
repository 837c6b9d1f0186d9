#include "agent/store/trial_launch.hpp"

#include "agent/store/connection.hpp"
#include "agent/store/sql_value.hpp"

namespace sg::agent {

void set_trial_launch(Store& store, std::int64_t trial_id, const std::string& executor,
                      const std::string& slots, int world_size, const std::string& job_id) {
  store.write([&] {
    SQLite::Statement st(store_detail::connection(store),
                         "UPDATE trials SET executor = COALESCE(NULLIF(?, ''), executor), slots = "
                         "COALESCE(NULLIF(?, ''), slots), "
                         "world_size = ?, job_id = COALESCE(NULLIF(?, ''), job_id) WHERE id = ?");
    st.bind(1, executor);
    st.bind(2, slots);
    st.bind(3, world_size);
    st.bind(4, job_id);
    st.bind(5, trial_id);
    st.exec();
  });
}

std::string trial_job_id(Store& store, std::int64_t trial_id) {
  SQLite::Statement q(store_detail::connection(store), "SELECT job_id FROM trials WHERE id = ?");
  q.bind(1, trial_id);
  return q.executeStep() && !q.getColumn(0).isNull() ? q.getColumn(0).getString() : std::string();
}

}  // namespace sg::agent
