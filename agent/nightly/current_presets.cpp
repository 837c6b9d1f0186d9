#include "agent/nightly/current_presets.hpp"

#include <cstdio>
#include <filesystem>
#include <map>

#include "agent/common/files.hpp"
#include "agent/presets/preset_device.hpp"
#include "agent/presets/preset_file.hpp"
#include "agent/store/nightly_store.hpp"

namespace sg::agent::nightly {

std::optional<double> claimed_speedup(const std::string& preset_text) {
  std::optional<double> found;
  std::size_t start = 0;
  while (start < preset_text.size()) {
    std::size_t end = preset_text.find('\n', start);
    std::string line =
        preset_text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? preset_text.size() : end + 1;
    double v = 0;
    if (std::sscanf(line.c_str(), "# campaign speedup: %lfx", &v) == 1 && v > 0)
      return v;  // newer headers
    if (std::sscanf(line.c_str(), "# speedup: %lfx", &v) == 1 && v > 0) found = v;
  }
  return found;
}

std::vector<CurrentPreset> current_presets(Store& store, const std::string& workload,
                                           const std::string& size, const std::string& presets_dir,
                                           const Manifest& manifest,
                                           const std::vector<NamedBudget>& budgets) {
  namespace fs = std::filesystem;
  std::map<std::string, CurrentPreset> by_name;
  std::error_code ec;
  if (fs::is_directory(presets_dir, ec)) {
    for (const auto& entry : fs::directory_iterator(presets_dir, ec)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".env") continue;
      CurrentPreset p;
      p.name = entry.path().stem().string();
      p.path = entry.path().string();
      auto text = read_file(p.path, kMaxPresetBytes);
      if (!text) {
        p.invalid = "unreadable or larger than 1 MiB";
      } else {
        p.content = *text;
        PresetParse parse = parse_preset(*text, manifest);
        if (parse.ok())
          p.config = normalize(parse.config, manifest);
        else
          p.invalid = parse.errors.front();
      }
      by_name[p.name] = std::move(p);
    }
  }
  // Newest first: the first row of a name is its current DB record.
  for (const auto& s : stored_presets(store, workload, size)) {
    auto it = by_name.find(s.row.name);
    if (it != by_name.end()) {
      CurrentPreset& p = it->second;
      if (!p.preset_id && (p.invalid.empty() ? config_key(p.config) == s.row.config_key : true)) {
        p.preset_id = s.id;
        if (p.budget_bytes == 0) p.budget_bytes = s.row.budget_bytes;
      }
      continue;
    }
    CurrentPreset p;
    p.name = s.row.name;
    if (!s.demoted_at.empty()) {
      by_name[p.name] = CurrentPreset{};  // a demoted name with no file: nothing current
      by_name[p.name].name = "";
      continue;
    }
    p.path = s.row.path;
    p.content = s.row.content;
    p.config = config_from_key(s.row.config_key);
    p.budget_bytes = s.row.budget_bytes;
    p.preset_id = s.id;
    if (Problem err = validate_config(p.config, manifest)) p.invalid = *err;
    by_name[p.name] = std::move(p);
  }
  std::vector<CurrentPreset> out;
  for (auto& [name, p] : by_name) {
    if (p.name.empty()) continue;
    for (const auto& b : budgets) {
      if (b.name == p.name && p.budget_bytes == 0) p.budget_bytes = static_cast<double>(b.bytes);
    }
    p.recorded_speedup = claimed_speedup(p.content).value_or(0.0);
    p.device_kind = preset_device_kind(p.content);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace sg::agent::nightly
