// The manifest (see manifest.hpp).
#include "trainer/manifest.hpp"

#include "kernels/common/registry.hpp"
#include "speedgate_build_info.hpp"
#include "trainer/lm/lm_config.hpp"
#include "trainer/model/wam_config.hpp"
#include "trainer/switches/switch_table.hpp"

#include <torch/version.h>

namespace sg::trainer {

nlohmann::json build_manifest() {
  nlohmann::json m;
  m["protocol"] = 1;
  m["trainer"] = "speedgate-train";
  m["version"] = SPEEDGATE_VERSION;
  m["capabilities"] = {"perturb"};  // run --perturb EPS (docs/protocol.md §2)
  m["build"] = {{"torch", TORCH_VERSION}, {"cuda", static_cast<bool>(SPEEDGATE_WITH_CUDA)}, {"git_sha", SPEEDGATE_GIT_SHA}};

  auto sizes = nlohmann::json::array();
  for (const auto& name : wam_size_names()) {
    const auto& c = wam_config(name);
    sizes.push_back({{"name", name},
                     {"trainable_params", trainable_params(c)},
                     {"frozen_params", text_encoder_params(c) + vae_params(c)},
                     {"model_flops_per_sample", model_flops_per_sample(c)},
                     {"tokens_per_sample", c.tokens_per_sample()},
                     {"default_micro_batch", c.default_micro_batch}});
  }
  m["workloads"] = nlohmann::json::array({{{"name", "wam"}, {"sizes", sizes}}});
  for (const auto& workload : lm_workload_names()) {
    const bool osft = workload == "lm_osft";
    auto lm_sizes = nlohmann::json::array();
    for (const auto& name : lm_size_names()) {
      const auto& c = lm_config(name);
      const double per_token = lm_model_flops_per_token(c);
      lm_sizes.push_back({{"name", name},
                          {"trainable_params", lm_trainable_params(c, osft)},
                          {"frozen_params", lm_frozen_params(c, osft)},
                          {"model_flops_per_token", per_token},
                          {"model_flops_per_sample", per_token * static_cast<double>(c.seq_len)},
                          {"tokens_per_sample", c.seq_len},
                          {"default_micro_batch", c.default_micro_batch}});
    }
    m["workloads"].push_back({{"name", workload}, {"sizes", lm_sizes}});
  }

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
                     {"workloads", s.workloads},
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
  m["switches"] = switches;

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
                        {"kernel_trial", {"wam"}},
                        {"unavailable_reason", f.available ? reason : f.unavailable_reason}});
  }
  m["kernel_families"] = families;
  return m;
}

}  // namespace sg::trainer
