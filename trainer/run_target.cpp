// validate_run_target and run_training (see train_loop.hpp): the run's workload comes from
// the registry; workload, size and switch applicability are checked before the runtime
// starts, so a bad target writes no result file.
#include "trainer/errors.hpp"
#include "trainer/test_faults.hpp"
#include "trainer/train_loop.hpp"
#include "trainer/workload/workload.hpp"

namespace sg::trainer {

void validate_run_target(const RunOptions& opt, const Switches& sw) {
  const Workload& w = workload_named(opt.workload);
  w.check_size(opt.size);
  check_switches_read(sw, w);
  (void)TestFaults::from_environment();  // an unknown fault name is bad input
}

void run_training(const RunOptions& opt, const Switches& sw, const Runtime& rt, RunResult& r) {
  workload_named(opt.workload).run(opt, sw, rt, r);
}

}  // namespace sg::trainer
