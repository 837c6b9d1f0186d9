// The workload registry (see workload.hpp). Registering a workload: include its folder's
// registration header and add its entry to workloads() below.
#include "common/suggest/suggest.hpp"
#include "trainer/errors.hpp"
#include "trainer/switches/switch_config.hpp"
#include "trainer/workload/lm/lm_registration.hpp"
#include "trainer/workload/wam/wam_registration.hpp"
#include "trainer/workload/workload.hpp"

#include <algorithm>

namespace sg::trainer {

const std::vector<Workload>& workloads() {
  static const std::vector<Workload> kWorkloads = {
      wam_registration(),
      lm_registration(),
      lm_osft_registration(),
  };
  return kWorkloads;
}

bool Workload::reads_switch(const SwitchSpec& s) const {
  return std::find(reads.begin(), reads.end(), s.scope) != reads.end();
}

const Workload* find_workload(const std::string& name) {
  for (const auto& w : workloads()) {
    if (w.name == name) return &w;
  }
  return nullptr;
}

const Workload& workload_named(const std::string& name) {
  if (const Workload* w = find_workload(name)) return *w;
  std::vector<std::string> names;
  for (const auto& w : workloads()) names.push_back(w.name);
  throw BadInputError("unknown workload '" + name + "'" + sg::did_you_mean(name, names) +
                      " (this trainer has: " + sg::join_names(names) + ")");
}

std::vector<std::string> workload_names_reading(const SwitchSpec& s) {
  std::vector<std::string> names;
  for (const auto& w : workloads()) {
    if (w.reads_switch(s)) names.push_back(w.name);
  }
  return names;
}

std::vector<std::string> workload_names_with(bool Workload::*flag) {
  std::vector<std::string> names;
  for (const auto& w : workloads()) {
    if (w.*flag) names.push_back(w.name);
  }
  return names;
}

void check_switches_read(const Switches& sw, const Workload& w) {
  check_switches_apply(sw, w.name, workload_names_reading);
}

}  // namespace sg::trainer
