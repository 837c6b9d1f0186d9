#include "agent/store/queries/report_queries.hpp"

#include <fmt/format.h>

#include "agent/store/connection.hpp"
#include "agent/store/row_mapper.hpp"

namespace sg::agent {

std::vector<AcceptedEvaluation> accepted_evaluations_by_speedup(Store& store,
                                                                std::int64_t campaign_id) {
  static const RowMap<AcceptedEvaluation> map{
      col("id", &AcceptedEvaluation::id),
      col("strategy", &AcceptedEvaluation::strategy),
      col("config_json", &AcceptedEvaluation::config),
      col("speedup", &AcceptedEvaluation::speedup),
  };
  SQLite::Statement q(store_detail::connection(store),
                      fmt::format("SELECT {} FROM evaluations WHERE campaign_id = ? AND "
                                  "disposition = 'accepted' ORDER BY speedup DESC, id",
                                  map.select_list()));
  q.bind(1, campaign_id);
  return map.read_all(q);
}

}  // namespace sg::agent
