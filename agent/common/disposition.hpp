// Trial and candidate outcomes: one enum, stored 1:1 as its name in the DB.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace sg::agent {

enum class Disposition {
  accepted,        // passed every gate and is faster (or a memory trade-off)
  gate_failed,     // bits / band / determinism check failed
  slower,          // correct, but the speed interval's upper bound is below 1 + min effect
  inconclusive,    // correct, but the speed interval still straddles 1 + min effect at the pair cap
  pruned,          // projected peak exceeds every memory budget
  oom,             // trainer exit 3
  killed,          // SIGKILL with no deadline pending (e.g. the kernel OOM killer)
  timeout,         // our deadline fired
  crash,           // other exit code or signal
  nan,             // trainer exit 4
  invalid_result,  // missing / empty / truncated / garbage / wrong-schema result
  stale,           // RUNNING row whose controller died; re-queued once
};

// An expected negative outcome of a trial, as a value: the disposition and why.
struct Failure {
  Disposition disposition;
  std::string reason;
};

std::string_view to_string(Disposition d);
std::optional<Disposition> disposition_from_string(std::string_view s);
// All dispositions in declaration order (for docs, tests and schema checks).
const Disposition* all_dispositions(std::size_t* count);

}  // namespace sg::agent
