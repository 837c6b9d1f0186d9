// Test-only fault injection through SPEEDGATE_TEST_FAULT (deliberately not an SG_*
// switch: it is never in the manifest, a preset or a search). Documented in
// docs/protocol.md so a controller's gate tests can prove they catch these faults:
//   grad_accum_sum  sum micro-batch gradients instead of averaging them (G x the norm)
//   nan             make the loss of step 1 NaN (exit 4)
//   oom             throw an out-of-memory error at step 1 (exit 3)
//   rank_crash      in a distributed run, rank 1 alone aborts (SIGABRT) at the start of
//                   step 1; its peers must then fail promptly, not hang
// Any other non-empty value is bad input (BadInputError): a typo must not train normally.
#pragma once

#include <cstdlib>
#include <string>

#include "trainer/errors.hpp"

namespace sg::trainer {

struct TestFaults {
  bool grad_accum_sum = false;
  bool nan_loss = false;
  bool oom = false;
  bool rank_crash = false;

  static TestFaults from_environment() {
    TestFaults f;
    const char* v = std::getenv("SPEEDGATE_TEST_FAULT");
    const std::string s = v == nullptr ? "" : v;
    f.grad_accum_sum = s == "grad_accum_sum";
    f.nan_loss = s == "nan";
    f.oom = s == "oom";
    f.rank_crash = s == "rank_crash";
    if (!s.empty() && f.name().empty()) {
      throw BadInputError(
          "SPEEDGATE_TEST_FAULT=" + s.substr(0, 80) +
          " is not a fault (grad_accum_sum, nan, oom, rank_crash; docs/protocol.md section 4)");
    }
    return f;
  }
  std::string name() const {
    return grad_accum_sum ? "grad_accum_sum"
           : nan_loss     ? "nan"
           : oom          ? "oom"
           : rank_crash   ? "rank_crash"
                          : "";
  }
};

}  // namespace sg::trainer
