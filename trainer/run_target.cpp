// validate_run_target (see train_loop.hpp): workload, size and switch applicability are
// checked before the runtime starts, so a bad target writes no result file.
#include "agent/common/suggest.hpp"
#include "trainer/errors.hpp"
#include "trainer/workload/lm/lm_config.hpp"
#include "trainer/workload/wam/wam_config.hpp"
#include "trainer/switches/switch_config.hpp"
#include "trainer/test_faults.hpp"
#include "trainer/train_loop.hpp"

namespace sg::trainer {

void validate_run_target(const RunOptions& opt, const Switches& sw) {
  if (is_lm_workload(opt.workload)) {
    (void)lm_config(opt.size);
  } else if (opt.workload == "wam") {
    (void)wam_config(opt.size);
  } else {
    throw BadInputError("unknown workload '" + opt.workload + "'" + sg::did_you_mean(opt.workload, {"wam", "lm", "lm_osft"}) +
                        " (this trainer has: wam, lm, lm_osft)");
  }
  check_switches_apply(sw, opt.workload);
  (void)TestFaults::from_environment();  // an unknown fault name is bad input
}

}  // namespace sg::trainer
