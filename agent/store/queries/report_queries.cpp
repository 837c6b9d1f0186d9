#include "agent/store/queries/report_queries.hpp"

#include "agent/store/connection.hpp"
#include "agent/store/row_mapper.hpp"

namespace sg::agent {

std::vector<AcceptedEvaluation> accepted_evaluations_by_speedup(Store& store,
                                                                std::int64_t campaign_id) {
  static const RowMap<AcceptedEvaluation> map{
      SG_COLUMNS(AcceptedEvaluation, id, strategy, speedup),
      col("config_json", &AcceptedEvaluation::config),
  };
  return map.select_all(store_detail::connection(store),
                        "FROM evaluations WHERE campaign_id = ? AND disposition = 'accepted' "
                        "ORDER BY speedup DESC, id",
                        campaign_id);
}

}  // namespace sg::agent
