// Kernel-variant families (protocol §1): SG_KERNEL_<FAMILY>=name=value[,name=value...]
// with each value from the parameter's `values`, subject to the family's
// `constraints` (integer expressions such as "threads*vec<=1024"). In a Config a
// family appears as the pseudo-switch KERNEL_<FAMILY> (its env var without SG_).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/common/problem.hpp"
#include "agent/protocol/manifest.hpp"

namespace sg::agent {

// The config name of a family ("KERNEL_ROPE" for env SG_KERNEL_ROPE).
std::string kernel_config_name(const KernelFamily& f);
const KernelFamily* find_kernel_family(const Manifest& m, const std::string& config_name);
const KernelFamily* find_kernel_family_env(const Manifest& m, const std::string& env);

// Evaluates one constraint with the parameter values bound; nullopt when it cannot
// be parsed or names an unknown parameter.
std::optional<bool> eval_constraint(const std::string& expr,
                                    const std::map<std::string, long long>& vars);

// nullopt when `value` is a valid parameter string for the family, else why not.
Problem validate_kernel_value(const KernelFamily& f, const std::string& value);

// "b=2,a=1" -> "a=1,b=2": the parameters sorted by name, the form the trainer's
// kernel-trial results and presets use. Throws std::invalid_argument for an item
// without '='.
std::string canonical_kernel_value(const std::string& text);

// Every valid parameter string (cartesian product in manifest order, filtered), each in
// canonical form.
std::vector<std::string> kernel_candidates(const KernelFamily& f);

}  // namespace sg::agent
