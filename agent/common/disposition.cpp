#include "agent/common/disposition.hpp"

#include <array>

namespace sg::agent {
namespace {

// Every disposition in declaration order, each with its stored name.
struct Named {
  Disposition disposition;
  std::string_view name;
};
constexpr Named kNames[] = {{Disposition::accepted, "accepted"},
                            {Disposition::gate_failed, "gate_failed"},
                            {Disposition::slower, "slower"},
                            {Disposition::inconclusive, "inconclusive"},
                            {Disposition::pruned, "pruned"},
                            {Disposition::oom, "oom"},
                            {Disposition::killed, "killed"},
                            {Disposition::timeout, "timeout"},
                            {Disposition::crash, "crash"},
                            {Disposition::nan, "nan"},
                            {Disposition::invalid_result, "invalid_result"},
                            {Disposition::stale, "stale"}};
constexpr std::size_t kCount = sizeof(kNames) / sizeof(kNames[0]);

// The dispositions alone, for all_dispositions.
constexpr std::array<Disposition, kCount> kAll = [] {
  std::array<Disposition, kCount> all{};
  for (std::size_t i = 0; i < kCount; ++i) all[i] = kNames[i].disposition;
  return all;
}();

}  // namespace

std::string_view to_string(Disposition d) {
  for (const Named& n : kNames) {
    if (n.disposition == d) return n.name;
  }
  return "crash";
}

std::optional<Disposition> disposition_from_string(std::string_view s) {
  for (const Named& n : kNames) {
    if (n.name == s) return n.disposition;
  }
  return std::nullopt;
}

const Disposition* all_dispositions(std::size_t* count) {
  *count = kCount;
  return kAll.data();
}

}  // namespace sg::agent
