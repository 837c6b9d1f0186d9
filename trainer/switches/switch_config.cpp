// Switch resolution and validation (see switch_config.hpp).
#include "trainer/switches/switch_config.hpp"

#include "common/preset/preset_syntax.hpp"
#include "kernels/common/registry.hpp"
#include "trainer/errors.hpp"
#include "trainer/switches/switch_table.hpp"

#include <optional>

extern char** environ;

namespace sg::trainer {
namespace {

constexpr const char* kPrefix = "SG_";
constexpr const char* kKernelPrefix = "SG_KERNEL_";

struct Source {
  std::string value;
  std::string where;  // "environment" or "preset FILE:LINE"
};

// Empty when value is in the switch's domain; otherwise why not.
std::string domain_error(const SwitchSpec& spec, const std::string& value) {
  switch (spec.type) {
    case SwitchType::kBool:
      return value == "0" || value == "1" ? "" : "expects 0 or 1";
    case SwitchType::kEnum:
      for (const auto& v : spec.values) {
        if (v == value) return "";
      }
      return "expects one of the enum values";
    case SwitchType::kInt: {
      try {
        size_t used = 0;
        const long long v = std::stoll(value, &used);
        if (used != value.size()) return "expects an integer";
        if (v < spec.min || v > spec.max) {
          return "expects an integer in " + std::to_string(spec.min) + ".." +
                 std::to_string(spec.max);
        }
        return "";
      } catch (const std::exception&) {
        return "expects an integer";
      }
    }
  }
  return "bad type";
}

// Validates one KEY=value pair in isolation; throws naming the switch and where.
void check_entry(const std::string& key, const std::string& value, const std::string& where) {
  if (key.rfind(kKernelPrefix, 0) == 0) {
    const std::string fam_name = key.substr(std::string(kKernelPrefix).size());
    for (const auto& fam : sg::kernels::families()) {
      if (fam.name != fam_name) continue;
      if (!fam.available) {
        throw BadInputError(where + ": " + key + " is unavailable: " + fam.unavailable_reason);
      }
      const SwitchSpec* sw = find_switch(fam.switch_name);
      if (sw != nullptr && !sw->unavailable_reason.empty()) {
        throw BadInputError(where + ": " + key + " is unavailable: " + sw->unavailable_reason);
      }
      const auto err = sg::kernels::parse_params(fam, value, nullptr);
      if (!err.empty()) throw BadInputError(where + ": " + key + "=" + value + ": " + err);
      return;
    }
    throw BadInputError(where + ": unknown kernel family variable " + key);
  }
  if (key.rfind(kPrefix, 0) != 0)
    throw BadInputError(where + ": " + key + " is not an SG_* switch");
  const SwitchSpec* spec = find_switch(key.substr(std::string(kPrefix).size()));
  if (spec == nullptr) throw BadInputError(where + ": unknown switch " + key);
  const auto err = domain_error(*spec, value);
  if (!err.empty())
    throw BadInputError(where + ": " + key + "=" + value + " is out of domain: " + err);
  if (!spec->unavailable_reason.empty() && value != spec->default_value) {
    throw BadInputError(where + ": " + key +
                        " is unavailable in this build: " + spec->unavailable_reason);
  }
}

}  // namespace

std::vector<PresetEntry> read_preset(const std::string& path) {
  std::string text;
  if (std::string why = sg::preset::read_file(path, &text); !why.empty()) {
    throw BadInputError("preset " + path + ": " + why);
  }
  const sg::preset::Syntax syntax = sg::preset::parse_syntax(text);
  if (!syntax.ok()) {
    std::string all;  // "preset FILE:LINE: why", as for the switch errors below
    for (const auto& e : syntax.errors) {
      all += (all.empty() ? "preset " : "; preset ") + path +
             (e.line > 0 ? ":" + std::to_string(e.line) : "") + ": " + e.why;
    }
    throw BadInputError(all);
  }
  std::vector<PresetEntry> entries;
  for (const auto& e : syntax.entries) {
    check_entry(e.key, e.value, "preset " + path + ":" + std::to_string(e.line));
    entries.push_back({e.key, e.value, e.line});
  }
  return entries;
}

std::map<std::string, std::string> sg_environment() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv(*e);
    if (kv.rfind(kPrefix, 0) != 0) continue;
    const auto eq = kv.find('=');
    out[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
  }
  return out;
}

Switches resolve_switches(const std::map<std::string, std::string>& env,
                          const std::string& preset_path) {
  std::map<std::string, Source> chosen;
  if (!preset_path.empty()) {
    for (const auto& e : read_preset(preset_path)) {
      chosen[e.key] = {e.value, "preset " + preset_path + ":" + std::to_string(e.line)};
    }
  }
  for (const auto& [key, value] : env) {
    check_entry(key, value, "environment");
    chosen[key] = {value, "environment"};
  }
  auto value_of = [&](const SwitchSpec& spec) {
    auto it = chosen.find(spec.env());
    return it == chosen.end() ? spec.default_value : it->second.value;
  };
  Switches sw;
  for (const auto& spec : switch_table()) {
    const std::string value = value_of(spec);
    if (value != spec.default_value) {
      for (const auto& req : spec.requires) {
        const auto eq = req.find('=');
        const SwitchSpec* dep = find_switch(req.substr(0, eq));
        const std::string need = req.substr(eq + 1);
        if (dep == nullptr || value_of(*dep) != need) {
          throw BadInputError(chosen.at(spec.env()).where + ": " + spec.env() + "=" + value +
                              " requires SG_" + req);
        }
      }
      if (!spec.deterministic) sw.nondeterministic = true;
    }
    spec.apply(sw, value);
    sw.resolved[spec.env()] = value;
  }
  for (const auto& [key, src] : chosen) {
    if (key.rfind(kKernelPrefix, 0) == 0) {
      sw.kernel_params[key.substr(std::string(kKernelPrefix).size())] = src.value;
      sw.resolved[key] = src.value;
    }
  }
  return sw;
}

void check_switches_apply(const Switches& sw, const std::string& workload,
                          const SwitchReaders& readers) {
  auto applies = [&](const SwitchSpec& spec) {
    for (const auto& w : readers(spec)) {
      if (w == workload) return true;
    }
    return false;
  };
  auto refuse = [&](const std::string& what, const SwitchSpec& spec) {
    std::string list;
    for (const auto& w : readers(spec)) list += (list.empty() ? "" : ", ") + w;
    throw BadInputError(what + " does not apply to workload " + workload + " (" + spec.env() +
                        " applies to: " + list + "); unset it for this workload");
  };
  for (const auto& spec : switch_table()) {
    auto it = sw.resolved.find(spec.env());
    if (it != sw.resolved.end() && it->second != spec.default_value && !applies(spec)) {
      refuse(spec.env() + "=" + it->second, spec);
    }
  }
  for (const auto& [family, value] : sw.kernel_params) {
    for (const auto& fam : sg::kernels::families()) {
      const SwitchSpec* spec = fam.name == family ? find_switch(fam.switch_name) : nullptr;
      if (spec != nullptr && !applies(*spec)) refuse(std::string(kKernelPrefix) + family, *spec);
    }
  }
}

}  // namespace sg::trainer
