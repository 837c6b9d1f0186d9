#include "agent/protocol/config.hpp"

#include <sstream>

#include "agent/protocol/kernel_params.hpp"

namespace sg::agent {

std::string config_key(const Config& c) {
  std::string out;
  for (const auto& [k, v] : c) {
    if (!out.empty()) out += ',';
    std::string escaped = v;  // kernel parameter strings contain ','; switch values never ';'
    for (auto& ch : escaped) {
      if (ch == ',') ch = ';';
    }
    out += k + "=" + escaped;
  }
  return out;
}

Config config_from_key(const std::string& key) {
  Config c;
  std::stringstream ss(key);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) continue;
    std::string v = item.substr(eq + 1);
    for (auto& ch : v) {
      if (ch == ';') ch = ',';
    }
    c[item.substr(0, eq)] = v;
  }
  return c;
}

std::string config_label(const Config& c) { return c.empty() ? "baseline" : config_key(c); }

Problem validate_config(const Config& c, const Manifest& m) {
  for (const auto& [name, value] : c) {
    if (const KernelFamily* f = find_kernel_family(m, name)) {
      if (!f->available)
        return "kernel family " + f->name + " is unavailable: " + f->unavailable_reason;
      if (Problem e = validate_kernel_value(*f, value)) return e;
      if (const SwitchSpec* on = f->switch_name.empty() ? nullptr : m.find_switch(f->switch_name)) {
        auto it = c.find(on->name);
        if (it == c.end() || it->second == on->default_value) {
          return "kernel family " + f->name + " requires its switch " + on->name + " to be on";
        }
      }
      continue;
    }
    const SwitchSpec* s = m.find_switch(name);
    if (!s) return "unknown switch " + name;
    if (!s->in_domain(value))
      return "switch " + name + ": value '" + value + "' is outside its domain";
    if (value == s->default_value) continue;
    if (!s->available) return "switch " + name + " is unavailable: " + s->unavailable_reason;
    for (const auto& r : s->requires_) {
      auto eq = r.find('=');
      std::string rn = r.substr(0, eq), rv = r.substr(eq + 1);
      auto it = c.find(rn);
      const SwitchSpec* rs = m.find_switch(rn);
      std::string have = it != c.end() ? it->second : (rs ? rs->default_value : "");
      if (have != rv)
        return "switch " + name + " requires " + r + " (have " + rn + "=" + have + ")";
    }
  }
  return std::nullopt;
}

bool close_requires(Config& c, const Manifest& m) {
  for (int round = 0; round < 64; ++round) {
    bool changed = false;
    Config snapshot = c;
    for (const auto& [name, value] : snapshot) {
      if (const KernelFamily* f = find_kernel_family(m, name)) {
        // A kernel family only runs when its switch is on.
        const SwitchSpec* on = f->switch_name.empty() ? nullptr : m.find_switch(f->switch_name);
        if (on && on->type == "bool" && !c.count(on->name)) {
          c[on->name] = "1";
          changed = true;
        }
        continue;
      }
      const SwitchSpec* s = m.find_switch(name);
      if (!s || value == s->default_value) continue;
      for (const auto& r : s->requires_) {
        auto eq = r.find('=');
        std::string rn = r.substr(0, eq), rv = r.substr(eq + 1);
        auto it = c.find(rn);
        if (it == c.end()) {
          const SwitchSpec* rs = m.find_switch(rn);
          if (rs && rs->default_value == rv) continue;
          c[rn] = rv;
          changed = true;
        } else if (it->second != rv) {
          return false;
        }
      }
    }
    if (!changed) return true;
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> config_env(const Config& c, const Manifest& m) {
  std::vector<std::pair<std::string, std::string>> env;
  for (const auto& [name, value] : c) {
    if (const SwitchSpec* s = m.find_switch(name))
      env.emplace_back(s->env, value);
    else if (const KernelFamily* f = find_kernel_family(m, name))
      env.emplace_back(f->env, value);
  }
  return env;
}

std::set<std::string> with_dependants(const Config& c, const std::string& name, const Manifest& m) {
  std::set<std::string> out = {name};
  for (const auto& [k, v] : c) {
    Config needs = {{k, v}};
    if (close_requires(needs, m) && needs.count(name)) out.insert(k);
  }
  return out;
}

Config normalize(const Config& c, const Manifest& m) {
  Config out;
  for (const auto& [k, v] : c) {
    const SwitchSpec* s = m.find_switch(k);
    if (!s || s->default_value != v) out[k] = v;
  }
  return out;
}

}  // namespace sg::agent
