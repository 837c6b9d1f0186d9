#include "agent/protocol/manifest.hpp"

#include <algorithm>

#include <climits>
#include <cstdint>
#include <set>

#include "agent/common/errors.hpp"

namespace sg::agent {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw UsageError("manifest: " + where + ": " + what);
}

std::string req_string(const json& o, const std::string& key, const std::string& where) {
  if (!o.contains(key) || !o[key].is_string()) bad(where + "." + key, "missing or not a string");
  return o[key].get<std::string>();
}

std::string opt_string(const json& o, const std::string& key) {
  return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string();
}

std::vector<std::string> string_list(const json& o, const std::string& key,
                                     const std::string& where, bool required) {
  std::vector<std::string> out;
  if (!o.contains(key)) {
    if (required) bad(where + "." + key, "missing");
    return out;
  }
  if (!o[key].is_array()) bad(where + "." + key, "not an array");
  for (const auto& v : o[key]) {
    if (!v.is_string())
      bad(where + "." + key, "every value must be a string (as in the environment)");
    out.push_back(v.get<std::string>());
  }
  return out;
}

// Optional typed fields: absent gives the default; present with the wrong type, or
// an integer outside the target type, is an error naming the field (never a
// nlohmann type_error, never a silent truncation).
std::int64_t opt_int64(const json& o, const std::string& key, std::int64_t def,
                       const std::string& where) {
  if (!o.contains(key)) return def;
  const json& v = o[key];
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX)) {
    bad(where + "." + key, "not an integer");
  }
  return v.get<std::int64_t>();
}

int opt_int(const json& o, const std::string& key, int def, const std::string& where) {
  std::int64_t v = opt_int64(o, key, def, where);
  if (v < INT_MIN || v > INT_MAX) bad(where + "." + key, "integer out of range");
  return static_cast<int>(v);
}

double opt_number(const json& o, const std::string& key, double def, const std::string& where) {
  if (!o.contains(key)) return def;
  if (!o[key].is_number()) bad(where + "." + key, "not a number");
  return o[key].get<double>();
}

bool opt_bool(const json& o, const std::string& key, bool def, const std::string& where) {
  if (!o.contains(key)) return def;
  if (!o[key].is_boolean()) bad(where + "." + key, "not true or false");
  return o[key].get<bool>();
}

bool is_name(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!(std::isupper(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  }
  return true;
}

// Values are later written unquoted into .env files that sh sources.
bool is_safe_value(const std::string& s) {
  if (s.empty() || s.size() > 256) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
          c == ':' || c == ',' || c == '+' || c == '/'))
      return false;
  }
  return true;
}

SwitchSpec parse_switch(const json& o, const std::string& where) {
  if (!o.is_object()) bad(where, "not an object");
  SwitchSpec s;
  s.name = req_string(o, "name", where);
  if (!is_name(s.name)) bad(where + ".name", "'" + s.name + "' is not [A-Z0-9_]+");
  s.env = req_string(o, "env", where);
  if (s.env != "SG_" + s.name) bad(where + ".env", "'" + s.env + "' must be SG_" + s.name);
  s.type = req_string(o, "type", where);
  if (s.type != "bool" && s.type != "int" && s.type != "enum")
    bad(where + ".type", "'" + s.type + "' is not bool|int|enum");
  s.values = string_list(o, "values", where, true);
  s.default_value = req_string(o, "default", where);
  s.requires_ = string_list(o, "requires", where, false);
  s.identity = req_string(o, "identity", where);
  if (s.identity != "bitwise" && s.identity != "tolerance")
    bad(where + ".identity", "'" + s.identity + "' is not bitwise|tolerance");
  s.effect = req_string(o, "effect", where);
  if (s.effect != "speed" && s.effect != "memory" && s.effect != "schedule")
    bad(where + ".effect", "'" + s.effect + "' is not speed|memory|schedule");
  s.available = opt_bool(o, "available", true, where);
  s.unavailable_reason = opt_string(o, "unavailable_reason");
  s.doc = opt_string(o, "doc");
  s.deterministic = opt_bool(o, "deterministic", true, where);
  s.workloads = string_list(o, "workloads", where, false);
  if (o.contains("workloads") && s.workloads.empty())
    bad(where + ".workloads", "empty (omit the field for every workload)");
  s.min_world_size = opt_int(o, "min_world_size", 1, where);
  if (s.min_world_size < 1) bad(where + ".min_world_size", "must be >= 1");
  if (s.type == "bool") {
    if (s.values != std::vector<std::string>{"0", "1"})
      bad(where + ".values", "a bool switch has values [\"0\",\"1\"]");
  }
  if (s.type == "int") {
    if (!o.contains("min") || !o["min"].is_number_integer() || !o.contains("max") ||
        !o["max"].is_number_integer()) {
      bad(where, "an int switch needs integer min and max");
    }
    s.min = opt_int64(o, "min", 0, where);
    s.max = opt_int64(o, "max", 0, where);
    if (s.min > s.max) bad(where, "min > max");
  }
  if (s.values.empty()) bad(where + ".values", "empty");
  for (const auto& v : s.values) {
    if (!is_safe_value(v))
      bad(where + ".values", "value '" + v + "' has characters outside [A-Za-z0-9_.:,+/-]");
    if (!s.in_domain(v)) bad(where + ".values", "value '" + v + "' outside min..max");
  }
  if (!s.in_domain(s.default_value))
    bad(where + ".default", "'" + s.default_value + "' outside the domain");
  for (const auto& r : s.requires_) {
    auto eq = r.find('=');
    if (eq == std::string::npos || !is_name(r.substr(0, eq)))
      bad(where + ".requires", "'" + r + "' is not NAME=value");
  }
  return s;
}

}  // namespace

std::int64_t parse_int(const std::string& s, bool* ok) {
  try {
    std::size_t pos = 0;
    long long v = std::stoll(s, &pos);
    *ok = pos == s.size();
    return v;
  } catch (...) {
    *ok = false;
    return 0;
  }
}

bool SwitchSpec::applies_to(const std::string& workload) const {
  if (workloads.empty()) return true;
  for (const auto& w : workloads) {
    if (w == workload) return true;
  }
  return false;
}

bool SwitchSpec::in_domain(const std::string& value) const {
  if (type == "int") {
    bool ok = false;
    std::int64_t v = parse_int(value, &ok);
    return ok && v >= min && v <= max && is_safe_value(value);
  }
  for (const auto& v : values) {
    if (v == value) return true;
  }
  return false;
}

const SwitchSpec* Manifest::find_switch(const std::string& name) const {
  for (const auto& s : switches) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const SwitchSpec* Manifest::find_env(const std::string& env) const {
  for (const auto& s : switches) {
    if (s.env == env) return &s;
  }
  return nullptr;
}

const SizeSpec* Manifest::find_size(const std::string& workload, const std::string& size) const {
  auto it = workloads.find(workload);
  if (it == workloads.end()) return nullptr;
  for (const auto& s : it->second) {
    if (s.name == size) return &s;
  }
  return nullptr;
}

Manifest Manifest::keep_switches(const std::function<bool(const SwitchSpec&)>& keep) const {
  Manifest m = *this;
  m.switches.clear();
  for (const auto& s : switches) {
    if (keep(s)) m.switches.push_back(s);
  }
  m.kernel_families.clear();
  for (const auto& f : kernel_families) {
    const SwitchSpec* s = find_switch(f.switch_name);
    if (s == nullptr || keep(*s)) m.kernel_families.push_back(f);
  }
  return m;
}

Manifest Manifest::for_workload(const std::string& workload) const {
  Manifest m = keep_switches([&](const SwitchSpec& s) { return s.applies_to(workload); });
  for (auto& f : m.kernel_families) {  // kernel trials only where the trainer can time them
    const auto& ws = f.kernel_trial_workloads;
    if (!ws.empty() && std::find(ws.begin(), ws.end(), workload) == ws.end())
      f.kernel_trial = false;
  }
  return m;
}

bool Manifest::can(const std::string& capability) const {
  return std::find(capabilities.begin(), capabilities.end(), capability) != capabilities.end();
}

Manifest Manifest::for_world_size(int world_size) const {
  return keep_switches([&](const SwitchSpec& s) { return s.min_world_size <= world_size; });
}

namespace {

// One entry of a workload's "sizes" (at `sw`).
SizeSpec parse_size(const json& s, const std::string& sw) {
  SizeSpec sz;
  sz.name = req_string(s, "name", sw);
  if (!s.is_object()) bad(sw, "not an object");
  sz.trainable_params = opt_int64(s, "trainable_params", 0, sw);
  sz.frozen_params = opt_int64(s, "frozen_params", 0, sw);
  sz.model_flops_per_sample = opt_number(s, "model_flops_per_sample", 0.0, sw);
  sz.tokens_per_sample = opt_number(s, "tokens_per_sample", 0.0, sw);
  sz.default_micro_batch = opt_int(s, "default_micro_batch", 1, sw);
  if (sz.default_micro_batch < 1) bad(sw + ".default_micro_batch", "must be >= 1");
  return sz;
}

// One entry of "kernel_families" (at `where`).
KernelFamily parse_kernel_family(const json& f, const std::string& where) {
  KernelFamily kf;
  kf.name = req_string(f, "name", where);
  kf.env = req_string(f, "env", where);
  kf.switch_name = opt_string(f, "switch");
  kf.available = opt_bool(f, "available", false, where);
  kf.unavailable_reason = opt_string(f, "unavailable_reason");
  // true (every workload) or the workloads whose shapes `kernel-trial` knows (protocol §1).
  if (f.contains("kernel_trial") && f["kernel_trial"].is_array()) {
    kf.kernel_trial_workloads = string_list(f, "kernel_trial", where, false);
    kf.kernel_trial = !kf.kernel_trial_workloads.empty();
  } else {
    kf.kernel_trial = opt_bool(f, "kernel_trial", false, where);
  }
  kf.constraints = string_list(f, "constraints", where, false);
  kf.variants = string_list(f, "variants", where, false);
  if (kf.env.rfind("SG_KERNEL_", 0) != 0)
    bad(where + ".env", "'" + kf.env + "' must start with SG_KERNEL_");
  if (f.contains("parameters") && f["parameters"].is_array()) {
    for (const auto& p : f["parameters"]) {
      KernelParam kp;
      kp.name = req_string(p, "name", where + ".parameters");
      kp.values = string_list(p, "values", where + ".parameters", true);
      kf.parameters.push_back(std::move(kp));
    }
  }
  return kf;
}

}  // namespace

Manifest parse_manifest(const json& j) {
  if (!j.is_object()) bad("(root)", "not a JSON object");
  Manifest m;
  m.raw = j;
  if (!j.contains("protocol") || !j["protocol"].is_number_integer()) bad("protocol", "missing");
  m.protocol = opt_int(j, "protocol", 0, "(root)");
  if (m.protocol != 1)
    bad("protocol",
        "version " + std::to_string(m.protocol) + " is not supported (this controller speaks 1)");
  m.trainer = opt_string(j, "trainer");
  m.version = opt_string(j, "version");
  m.build = j.value("build", json::object());
  if (j.contains("capabilities")) {
    const auto& caps = j["capabilities"];
    if (!caps.is_array()) bad("capabilities", "must be an array of strings");
    for (std::size_t i = 0; i < caps.size(); ++i) {
      if (!caps[i].is_string()) bad("capabilities[" + std::to_string(i) + "]", "must be a string");
      m.capabilities.push_back(caps[i].get<std::string>());
    }
  }
  if (!j.contains("workloads") || !j["workloads"].is_array() || j["workloads"].empty())
    bad("workloads", "missing or empty");
  for (std::size_t i = 0; i < j["workloads"].size(); ++i) {
    const auto& w = j["workloads"][i];
    std::string where = "workloads[" + std::to_string(i) + "]";
    std::string name = req_string(w, "name", where);
    if (!w.contains("sizes") || !w["sizes"].is_array()) bad(where + ".sizes", "missing");
    auto& sizes = m.workloads[name];
    for (std::size_t k = 0; k < w["sizes"].size(); ++k) {
      std::string sw = where + ".sizes[" + std::to_string(k) + "]";
      sizes.push_back(parse_size(w["sizes"][k], sw));
    }
  }
  if (!j.contains("switches") || !j["switches"].is_array()) bad("switches", "missing");
  std::set<std::string> names;
  for (std::size_t i = 0; i < j["switches"].size(); ++i) {
    auto s = parse_switch(j["switches"][i], "switches[" + std::to_string(i) + "]");
    if (!names.insert(s.name).second)
      bad("switches[" + std::to_string(i) + "]", "duplicate switch " + s.name);
    m.switches.push_back(std::move(s));
  }
  for (const auto& s : m.switches) {
    for (const auto& w : s.workloads) {
      if (!m.workloads.count(w))
        bad("switches." + s.name + ".workloads", "'" + w + "' is not a workload of this manifest");
    }
    for (const auto& r : s.requires_) {
      if (!names.count(r.substr(0, r.find('='))))
        bad("switches." + s.name + ".requires", "'" + r + "' names an unknown switch");
    }
  }
  if (j.contains("kernel_families") && j["kernel_families"].is_array()) {
    for (std::size_t i = 0; i < j["kernel_families"].size(); ++i) {
      m.kernel_families.push_back(parse_kernel_family(
          j["kernel_families"][i], "kernel_families[" + std::to_string(i) + "]"));
    }
  }
  return m;
}

Manifest parse_manifest_text(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    throw UsageError(std::string("manifest: not valid JSON: ") + e.what());
  }
  return parse_manifest(j);
}

}  // namespace sg::agent
