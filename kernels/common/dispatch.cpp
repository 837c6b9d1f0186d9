// Kernel selection, the per-family dispatch state and the test hooks (see dispatch.hpp).
#include "kernels/common/first_call.hpp"

#include <stdexcept>

namespace sg::kernels {
namespace {

std::map<std::string, FamilyState> build_states() {
  std::map<std::string, FamilyState> states;
  for (const auto& f : families()) states[f.name];
  return states;
}

void set_family(FamilyState& fs, bool selected, bool has_fused, const std::string& name,
                const std::map<std::string, std::string>& params) {
  ParamValues values = family(name).defaults;
  if (selected) {
    if (!has_fused)
      throw std::invalid_argument("kernel family " + name + " has no fused variant in this build");
    auto it = params.find(name);
    if (it != params.end()) {
      const auto err = parse_params(family(name), it->second, &values);
      if (!err.empty())
        throw std::invalid_argument("SG_KERNEL_" + name + "=" + it->second + ": " + err);
    }
  }
  if (fs.selected != selected || fs.params != values) {
    fs.passed.clear();
    fs.fell_back = false;
  }
  fs.selected = selected;
  fs.params = values;
}

}  // namespace

FamilyState& family_state(const std::string& name) {
  static std::map<std::string, FamilyState> states = build_states();
  auto it = states.find(name);
  if (it == states.end()) throw std::invalid_argument("unknown kernel family: " + name);
  return it->second;
}

std::mutex& dispatch_mutex() {
  static std::mutex mu;
  return mu;
}

bool bitwise_equal(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes() || a.device() != b.device())
    return false;
  if (!at::isFloatingType(a.scalar_type())) return at::equal(a, b);
  at::ScalarType bits = at::kLong;
  switch (a.element_size()) {
    case 2:
      bits = at::kShort;
      break;
    case 4:
      bits = at::kInt;
      break;
    default:
      bits = at::kLong;
      break;
  }
  return at::equal(a.contiguous().view(bits), b.contiguous().view(bits));
}

void select_kernels(const KernelSelection& sel) {
  for (const auto& [name, on] : sel.fused) family(name);  // throws for an unknown family
  std::lock_guard<std::mutex> lock(dispatch_mutex());
  for (const auto& fam : families()) {
    auto& fs = family_state(fam.name);
    auto it = sel.fused.find(fam.name);
    const bool selected = it != sel.fused.end() && it->second;
    set_family(fs, selected, fs.fused_override != nullptr || fam.available, fam.name, sel.params);
  }
}

std::vector<std::string> fallen_back_families() {
  std::lock_guard<std::mutex> lock(dispatch_mutex());
  std::vector<std::string> out;
  for (const auto& fam : families()) {
    if (family_state(fam.name).fell_back) out.push_back(fam.name);
  }
  return out;
}

namespace testing {

void reset_first_call_checks() {
  std::lock_guard<std::mutex> lock(dispatch_mutex());
  for (const auto& fam : families()) {
    auto& fs = family_state(fam.name);
    fs.passed.clear();
    fs.fell_back = false;
    fs.inject_mismatch = false;
  }
}

void inject_first_call_mismatch(const std::string& family_name) {
  auto& fs = family_state(family_name);
  std::lock_guard<std::mutex> lock(dispatch_mutex());
  fs.inject_mismatch = true;
}

void override_fused(const std::string& family_name, const Variant* fused) {
  auto& fs = family_state(family_name);
  std::lock_guard<std::mutex> lock(dispatch_mutex());
  fs.fused_override = fused;
}

}  // namespace testing
}  // namespace sg::kernels
