// The kernel-family registry: each family's manifest data (tunable parameters as data,
// constraints, defaults, variants, availability) and its ops for the timing harness, listed
// once in kernels/families.cpp. The trainer reads it to fill the manifest and to validate
// SG_KERNEL_<FAMILY>; every family's plain variant is always there.
#pragma once

#include "kernels/common/variant.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sg::kernels {

struct KernelShape;  // kernels/common/timing/op_cases.hpp
struct OpCase;

// One family as the manifest shows it.
struct FamilyInfo {
  std::string name;         // "ROPE"
  std::string env;          // "SG_KERNEL_ROPE": parameter values, e.g. "threads=128,vec=2"
  std::string switch_name;  // the trainer switch that turns the fused variant on
  std::vector<ParamSpec> parameters;
  std::vector<Constraint> constraints;
  bool available = false;  // a fused (non-plain) variant is built into this binary
  std::string unavailable_reason;
  std::vector<std::string> variants;  // variant names, plain first
  ParamValues defaults;  // the fused variant's parameters when SG_KERNEL_<F> omits them
};

// One registered family: its manifest data, and its ops as the wam model runs them at a
// workload's shapes (timed by speedgate-kernels-bench and `speedgate-train kernel-trial`).
struct FamilyRegistration {
  FamilyInfo (*info)() = nullptr;
  std::vector<OpCase> (*op_cases)(const KernelShape& shape, int input_sets) = nullptr;
};

// The registered families in manifest order (defined in kernels/families.cpp, the one list).
const std::vector<FamilyRegistration>& registrations();

// A family whose fused variant is CUDA code: env SG_KERNEL_<name>, variants plain_aten (and
// fused_cuda, available, when SPEEDGATE_WITH_CUDA; otherwise the reason it is not).
FamilyInfo cuda_family(std::string name, std::string switch_name, std::vector<ParamSpec> parameters,
                       std::vector<Constraint> constraints, ParamValues defaults);
// The value of `name` in params, 1 when absent: what a constraint reads.
int64_t param(const ParamValues& params, const char* name);
// The constraint "threads*vec<=Limit" (the fused kernels' block-size bound).
template <int64_t Limit>
Constraint threads_times_vec_at_most() {
  return {"threads*vec<=" + std::to_string(Limit),
          [](const ParamValues& p) { return param(p, "threads") * param(p, "vec") <= Limit; }};
}

const std::vector<FamilyInfo>& families();
// REQUIRES: name is one of families(). Throws std::invalid_argument otherwise.
const FamilyInfo& family(const std::string& name);
// Parses "threads=128,vec=2" against the family: unknown names, values outside the
// searched set and violated constraints (checked with the defaults filling omitted
// parameters) give a non-empty error string. On success *out holds every parameter.
std::string parse_params(const FamilyInfo& family, const std::string& text, ParamValues* out);

// The family's defaults overlaid with the given values.
ParamValues with_defaults(const FamilyInfo& family, const ParamValues& given);
// kSuccess when every parameter is present with a value from its domain and every
// constraint holds; kErrorConstraint otherwise.
Status check_params(const FamilyInfo& family, const ParamValues& params);
// Every parameter combination of the family that satisfies its constraints, in the
// manifest's order (the first parameter varies slowest).
std::vector<ParamValues> legal_params(const FamilyInfo& family);

}  // namespace sg::kernels
