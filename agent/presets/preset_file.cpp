#include "agent/presets/preset_file.hpp"

#include <fmt/format.h>

#include "agent/protocol/kernel_params.hpp"

namespace sg::agent {

PresetParse parse_preset(const std::string& text, const Manifest& manifest) {
  PresetParse out;
  preset::Syntax syntax = preset::parse_syntax(text);
  for (const auto& e : syntax.errors) out.errors.push_back(e.text());
  out.comments = std::move(syntax.comments);
  for (const auto& e : syntax.entries) {
    auto err = [&](const std::string& m) {
      out.errors.push_back(fmt::format("line {}: {}", e.line, m));
    };
    if (const KernelFamily* f = find_kernel_family_env(manifest, e.key)) {
      if (Problem why = validate_kernel_value(*f, e.value)) {
        err(*why);
      } else {
        out.config[kernel_config_name(*f)] = e.value;
      }
      continue;
    }
    const SwitchSpec* s = manifest.find_env(e.key);
    if (!s) {
      err("unknown switch " + e.key + " (not in the trainer manifest)");
    } else if (!s->in_domain(e.value)) {
      err(fmt::format("switch {}: value '{}' is outside its domain", e.key, e.value.substr(0, 80)));
    } else {
      out.config[s->name] = e.value;
    }
  }
  if (out.errors.empty()) {
    if (Problem e = validate_config(normalize(out.config, manifest), manifest)) {
      out.errors.push_back(*e);
    }
  }
  return out;
}

PresetParse parse_preset_file(const std::string& path, const Manifest& manifest) {
  std::string text;
  if (std::string why = preset::read_file(path, &text); !why.empty()) {
    PresetParse out;
    out.errors.push_back(why);
    return out;
  }
  return parse_preset(text, manifest);
}

std::string render_preset(const std::vector<std::string>& comment_lines, const Config& config,
                          const Manifest& manifest) {
  std::string out;
  for (const auto& c : comment_lines) {
    // No trailing whitespace: the syntax refuses it.
    const std::string line = ("# " + c).substr(0, ("# " + c).find_last_not_of(" \t\r\n") + 1);
    out += line + "\n";
  }
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
