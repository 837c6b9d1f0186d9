#include "agent/common/disposition.hpp"

namespace sg::agent {
namespace {
constexpr Disposition kAll[] = {
    Disposition::accepted,     Disposition::gate_failed,    Disposition::slower,
    Disposition::inconclusive, Disposition::pruned,         Disposition::oom,
    Disposition::killed,       Disposition::timeout,        Disposition::crash,
    Disposition::nan,          Disposition::invalid_result, Disposition::stale};
}  // namespace

std::string_view to_string(Disposition d) {
  switch (d) {
    case Disposition::accepted:
      return "accepted";
    case Disposition::gate_failed:
      return "gate_failed";
    case Disposition::slower:
      return "slower";
    case Disposition::inconclusive:
      return "inconclusive";
    case Disposition::pruned:
      return "pruned";
    case Disposition::oom:
      return "oom";
    case Disposition::killed:
      return "killed";
    case Disposition::timeout:
      return "timeout";
    case Disposition::crash:
      return "crash";
    case Disposition::nan:
      return "nan";
    case Disposition::invalid_result:
      return "invalid_result";
    case Disposition::stale:
      return "stale";
  }
  return "crash";
}

std::optional<Disposition> disposition_from_string(std::string_view s) {
  for (Disposition d : kAll) {
    if (to_string(d) == s) return d;
  }
  return std::nullopt;
}

const Disposition* all_dispositions(std::size_t* count) {
  *count = sizeof(kAll) / sizeof(kAll[0]);
  return kAll;
}

}  // namespace sg::agent
