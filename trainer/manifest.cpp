// The manifest (see manifest.hpp): the registered workloads, the switch table and the
// kernel registry as describe --json prints them.
#include "trainer/manifest.hpp"

#include "kernels/common/registry.hpp"
#include "speedgate_build_info.hpp"
#include "trainer/switches/switch_table.hpp"
#include "trainer/workload/workload.hpp"

#include <torch/version.h>

namespace sg::trainer {
namespace {

nlohmann::json workloads_json() {
  auto out = nlohmann::json::array();
  for (const auto& w : workloads()) {
    auto sizes = nlohmann::json::array();
    for (const auto& z : w.sizes()) {
      nlohmann::json j{{"name", z.name},
                       {"trainable_params", z.trainable_params},
                       {"frozen_params", z.frozen_params},
                       {"model_flops_per_sample", z.model_flops_per_sample},
                       {"tokens_per_sample", z.tokens_per_sample},
                       {"default_micro_batch", z.default_micro_batch}};
      if (z.model_flops_per_token) j["model_flops_per_token"] = *z.model_flops_per_token;
      sizes.push_back(j);
    }
    out.push_back({{"name", w.name}, {"sizes", sizes}});
  }
  return out;
}

nlohmann::json switches_json() {
  auto switches = nlohmann::json::array();
  for (const auto& s : switch_table()) {
    nlohmann::json j{{"name", s.name},
                     {"env", s.env()},
                     {"type", to_string(s.type)},
                     {"values", s.values},
                     {"default", s.default_value},
                     {"requires", s.requires},
                     {"identity", to_string(s.identity)},
                     {"effect", to_string(s.effect)},
                     {"deterministic", s.deterministic},
                     {"workloads", workload_names_reading(s)},
                     {"available", s.unavailable_reason.empty()},
                     {"unavailable_reason", s.unavailable_reason},
                     {"doc", s.doc}};
    if (s.min_world_size > 1) j["min_world_size"] = s.min_world_size;
    if (s.type == SwitchType::kInt) {
      j["min"] = s.min;
      j["max"] = s.max;
    }
    switches.push_back(j);
  }
  return switches;
}

nlohmann::json kernel_families_json() {
  auto families = nlohmann::json::array();
  for (const auto& f : sg::kernels::families()) {
    auto params = nlohmann::json::array();
    for (const auto& p : f.parameters) {
      std::vector<std::string> values;
      for (auto v : p.values) values.push_back(std::to_string(v));
      params.push_back({{"name", p.name}, {"values", values}});
    }
    std::vector<std::string> constraints;
    for (const auto& c : f.constraints) constraints.push_back(c.text);
    // The fused variant's parameters when SG_KERNEL_<FAMILY> is unset ("threads=128,vec=2").
    std::string defaults;
    for (const auto& [name, value] : f.defaults) {
      defaults += (defaults.empty() ? "" : ",") + name + "=" + std::to_string(value);
    }
    // A family is usable only where its switch is (e.g. a CUDA build without a GPU).
    const SwitchSpec* sw = find_switch(f.switch_name);
    const std::string reason = sw == nullptr ? "" : sw->unavailable_reason;
    families.push_back({{"name", f.name},
                        {"env", f.env},
                        {"switch", f.switch_name},
                        {"parameters", params},
                        {"constraints", constraints},
                        {"variants", f.variants},
                        {"defaults", defaults},
                        {"available", f.available && reason.empty()},
                        // `speedgate-train kernel-trial --family NAME` times its variants at
                        // these workloads' shapes (protocol §5)
                        {"kernel_trial", workload_names_with(&Workload::kernel_trial)},
                        {"unavailable_reason", f.available ? reason : f.unavailable_reason}});
  }
  return families;
}

}  // namespace

nlohmann::json build_manifest() {
  nlohmann::json m;
  m["protocol"] = 1;
  m["trainer"] = "speedgate-train";
  m["version"] = SPEEDGATE_VERSION;
  m["capabilities"] = {"perturb"};  // run --perturb EPS (docs/protocol.md §2)
  m["build"] = {{"torch", TORCH_VERSION},
                {"cuda", static_cast<bool>(SPEEDGATE_WITH_CUDA)},
                {"git_sha", SPEEDGATE_GIT_SHA}};
  m["workloads"] = workloads_json();
  m["switches"] = switches_json();
  m["kernel_families"] = kernel_families_json();
  return m;
}

}  // namespace sg::trainer
