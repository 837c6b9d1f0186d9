// The trainer manifest (protocol §1): the ONLY source of switch names, domains,
// identity classes and kernel families. Parsing validates every field and names
// the bad one; nothing in the agent knows a switch of its own.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sg::agent {

struct SwitchSpec {
  std::string name;                 // e.g. TEXT_CACHE
  std::string env;                  // e.g. SG_TEXT_CACHE
  std::string type;                 // bool | int | enum
  std::vector<std::string> values;  // candidates worth searching (bool: 0/1; enum: whole domain)
  std::int64_t min = 0, max = 0;    // int only, inclusive
  std::string default_value;
  std::vector<std::string> requires_;  // "NAME=value"
  std::string identity;                // bitwise | tolerance
  std::string effect;                  // speed | memory | schedule
  bool available = true;
  std::string unavailable_reason;
  std::string doc;
  // false: some non-default value has no deterministic kernel, so the gate must
  // use tolerance even when identity says bitwise (protocol §1, optional field).
  bool deterministic = true;
  // Workloads whose training reads this switch (protocol §1, optional field); empty
  // (field absent) means every workload.
  std::vector<std::string> workloads;
  // Data-parallel ranks below which the switch does nothing (protocol §1, optional
  // field, default 1): a campaign whose trials run on fewer ranks does not search it.
  int min_world_size = 1;

  bool applies_to(const std::string& workload) const;
  bool bitwise() const { return identity == "bitwise" && deterministic; }
  // True when value is inside the declared domain (int: min..max; else in values).
  bool in_domain(const std::string& value) const;
};

// An int switch value ("8", "-1") as a number; *ok false unless the whole text is one.
std::int64_t parse_int(const std::string& s, bool* ok);

struct KernelParam {
  std::string name;
  std::vector<std::string> values;
};

struct KernelFamily {
  std::string name, env, switch_name;
  std::vector<KernelParam> parameters;
  std::vector<std::string> constraints;
  std::vector<std::string> variants;  // variant names, the plain reference first
  bool available = false;
  std::string unavailable_reason;
  bool kernel_trial = false;  // the trainer's `kernel-trial` times this family (protocol §5)
  // The workloads it can time it for (manifest "kernel_trial": [...]); empty = every one.
  // for_workload() clears kernel_trial for any other workload.
  std::vector<std::string> kernel_trial_workloads;
};

struct SizeSpec {
  std::string name;
  std::int64_t trainable_params = 0, frozen_params = 0;
  double model_flops_per_sample = 0, tokens_per_sample = 0;
  int default_micro_batch = 1;
};

struct Manifest {
  int protocol = 1;
  std::string trainer, version;
  nlohmann::json build;
  std::map<std::string, std::vector<SizeSpec>> workloads;
  std::vector<SwitchSpec> switches;
  std::vector<KernelFamily> kernel_families;
  // Optional protocol features the trainer implements (manifest "capabilities"), e.g.
  // "perturb": `run --perturb EPS` (the tolerance gate's rounding band).
  std::vector<std::string> capabilities;
  nlohmann::json raw;  // as received; stored in the DB

  bool can(const std::string& capability) const;

  const SwitchSpec* find_switch(const std::string& name) const;
  const SwitchSpec* find_env(const std::string& env) const;
  const SizeSpec* find_size(const std::string& workload, const std::string& size) const;
  // The search space of a campaign on `workload`: a copy without the switches (and the
  // kernel families of switches) that do not apply to it; raw is kept whole.
  Manifest for_workload(const std::string& workload) const;
  // Likewise without the switches that do nothing on `world_size` ranks (min_world_size).
  Manifest for_world_size(int world_size) const;

 private:
  // A copy with the switches `keep` accepts and the kernel families of those switches
  // (a family whose switch the manifest lacks is kept); raw is kept whole.
  Manifest keep_switches(const std::function<bool(const SwitchSpec&)>& keep) const;
};

// Throws UsageError("manifest: switches[3].type: ...") on any violation.
Manifest parse_manifest(const nlohmann::json& j);
Manifest parse_manifest_text(const std::string& text);

}  // namespace sg::agent
