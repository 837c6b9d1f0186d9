// The registry mechanism: families as data (from the registrations in kernels/families.cpp)
// and the parsing and checking of their parameter values.
#include "kernels/common/registry.hpp"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace sg::kernels {
namespace {

#if SPEEDGATE_WITH_CUDA
constexpr bool kFusedBuilt = true;
constexpr const char* kNoFusedReason = "";
#else
constexpr bool kFusedBuilt = false;
constexpr const char* kNoFusedReason =
    "no CUDA in this build (SPEEDGATE_WITH_CUDA=0): fused kernels are CUDA-only";
#endif

std::vector<std::string> variant_names() {
  if (kFusedBuilt) return {"plain_aten", "fused_cuda"};
  return {"plain_aten"};
}

std::vector<FamilyInfo> build_families() {
  std::vector<FamilyInfo> out;
  for (const auto& r : registrations()) out.push_back(r.info());
  return out;
}

}  // namespace

FamilyInfo cuda_family(std::string name, std::string switch_name, std::vector<ParamSpec> parameters,
                       std::vector<Constraint> constraints, ParamValues defaults) {
  FamilyInfo f;
  f.env = "SG_KERNEL_" + name;
  f.name = std::move(name);
  f.switch_name = std::move(switch_name);
  f.parameters = std::move(parameters);
  f.constraints = std::move(constraints);
  f.available = kFusedBuilt;
  f.unavailable_reason = kNoFusedReason;
  f.variants = variant_names();
  f.defaults = std::move(defaults);
  return f;
}

int64_t param(const ParamValues& p, const char* name) {
  auto it = p.find(name);
  return it == p.end() ? 1 : it->second;
}

const std::vector<FamilyInfo>& families() {
  static const std::vector<FamilyInfo> kFamilies = build_families();
  return kFamilies;
}

const FamilyInfo& family(const std::string& name) {
  for (const auto& f : families()) {
    if (f.name == name) return f;
  }
  throw std::invalid_argument("unknown kernel family: " + name);
}

std::string parse_params(const FamilyInfo& fam, const std::string& text, ParamValues* out) {
  ParamValues values;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos) return "expected name=value, got '" + item + "'";
    const std::string key = item.substr(0, eq);
    const std::string val = item.substr(eq + 1);
    const ParamSpec* spec = nullptr;
    for (const auto& p : fam.parameters) {
      if (p.name == key) spec = &p;
    }
    if (spec == nullptr) return "unknown parameter '" + key + "' of kernel family " + fam.name;
    int64_t v = 0;
    try {
      size_t used = 0;
      v = std::stoll(val, &used);
      if (used != val.size()) throw std::invalid_argument(val);
    } catch (const std::exception&) {
      return "parameter '" + key + "' needs an integer, got '" + val + "'";
    }
    bool ok = false;
    for (int64_t allowed : spec->values) ok = ok || allowed == v;
    if (!ok) return "parameter '" + key + "'=" + val + " is outside its domain";
    values[key] = v;
  }
  values = with_defaults(fam, values);
  for (const auto& c : fam.constraints) {
    if (c.holds != nullptr && !c.holds(values)) return "constraint violated: " + c.text;
  }
  if (out != nullptr) *out = values;
  return "";
}

ParamValues with_defaults(const FamilyInfo& fam, const ParamValues& given) {
  ParamValues out = fam.defaults;
  for (const auto& [k, v] : given) out[k] = v;
  return out;
}

Status check_params(const FamilyInfo& fam, const ParamValues& params) {
  for (const auto& spec : fam.parameters) {
    auto it = params.find(spec.name);
    if (it == params.end()) return Status::kErrorConstraint;
    if (std::find(spec.values.begin(), spec.values.end(), it->second) == spec.values.end()) {
      return Status::kErrorConstraint;
    }
  }
  for (const auto& c : fam.constraints) {
    if (c.holds != nullptr && !c.holds(params)) return Status::kErrorConstraint;
  }
  return Status::kSuccess;
}

std::vector<ParamValues> legal_params(const FamilyInfo& family) {
  std::vector<ParamValues> all{{}};
  for (const auto& spec : family.parameters) {
    std::vector<ParamValues> next;
    for (const auto& partial : all) {
      for (auto v : spec.values) {
        auto p = partial;
        p[spec.name] = v;
        next.push_back(p);
      }
    }
    all = std::move(next);
  }
  std::vector<ParamValues> legal;
  for (const auto& p : all) {
    if (check_params(family, p) == Status::kSuccess) legal.push_back(p);
  }
  return legal;
}

}  // namespace sg::kernels
