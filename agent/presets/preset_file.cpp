#include "agent/presets/preset_file.hpp"

#include <set>

#include <fmt/format.h>

#include "agent/manifest/kernel_params.hpp"

namespace sg::agent {
namespace {

bool valid_utf8(const std::string& s) {
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int extra = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xe ? 2 : (c >> 3) == 0x1e ? 3 : -1;
    if (extra < 0 || i + static_cast<std::size_t>(extra) >= n) return false;
    for (int k = 1; k <= extra; ++k) {
      if ((static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]) >> 6) != 0x2) return false;
    }
    i += static_cast<std::size_t>(extra) + 1;
  }
  return true;
}

bool is_env_name(const std::string& k) {
  if (k.empty() || std::isdigit(static_cast<unsigned char>(k[0]))) return false;
  for (char c : k) {
    if (!(std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

}  // namespace

PresetParse parse_preset(const std::string& text, const Manifest& manifest) {
  PresetParse out;
  if (text.size() > kMaxPresetBytes) {
    out.errors.push_back(fmt::format("file is larger than {} bytes", kMaxPresetBytes));
    return out;
  }
  if (text.find('\0') != std::string::npos) {
    out.errors.push_back("file contains NUL bytes");
    return out;
  }
  if (!valid_utf8(text)) {
    out.errors.push_back("file is not valid UTF-8");
    return out;
  }
  std::set<std::string> seen;
  std::size_t start = 0;
  int lineno = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? text.size() : end + 1;
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto err = [&](const std::string& m) { out.errors.push_back(fmt::format("line {}: {}", lineno, m)); };
    if (line.size() > kMaxPresetLine) {
      err(fmt::format("longer than {} characters", kMaxPresetLine));
      continue;
    }
    if (line.empty()) continue;
    if (line[0] == '#') {
      out.comments.push_back(line.substr(1));
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(line[0]))) {
      err("leading whitespace (write KEY=value or a full-line # comment)");
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos) {
      err("expected KEY=value");
      continue;
    }
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (!is_env_name(key)) {
      err("'" + key + "' is not a variable name");
      continue;
    }
    if (key.rfind("SG_", 0) != 0) {
      err("'" + key + "' is not a switch (only SG_* switch variables are allowed)");
      continue;
    }
    if (const KernelFamily* f = find_kernel_family_env(manifest, key)) {
      if (!seen.insert(key).second) {
        err("duplicate switch " + key);
        continue;
      }
      if (std::string e = validate_kernel_value(*f, value); !e.empty()) {
        err(e);
        continue;
      }
      out.config[kernel_config_name(*f)] = value;
      continue;
    }
    const SwitchSpec* s = manifest.find_env(key);
    if (!s) {
      err("unknown switch " + key + " (not in the trainer manifest)");
      continue;
    }
    if (!seen.insert(key).second) {
      err("duplicate switch " + key);
      continue;
    }
    if (!s->in_domain(value)) {
      err(fmt::format("switch {}: value '{}' is outside its domain", key, value.substr(0, 80)));
      continue;
    }
    out.config[s->name] = value;
  }
  if (out.errors.empty()) {
    std::string e = validate_config(normalize(out.config, manifest), manifest);
    if (!e.empty()) out.errors.push_back(e);
  }
  return out;
}

std::string render_preset(const std::vector<std::string>& comment_lines, const Config& config,
                          const Manifest& manifest) {
  std::string out;
  for (const auto& c : comment_lines) out += "# " + c + "\n";
  for (const auto& s : manifest.switches) {
    auto it = config.find(s.name);
    if (it != config.end()) out += s.env + "=" + it->second + "\n";
  }
  for (const auto& f : manifest.kernel_families) {
    auto it = config.find(kernel_config_name(f));
    if (it != config.end()) out += f.env + "=" + it->second + "\n";
  }
  return out;
}

}  // namespace sg::agent
