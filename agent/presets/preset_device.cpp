#include "agent/presets/preset_device.hpp"

#include <sstream>

#include "agent/protocol/manifest.hpp"
#include "agent/runner/executor.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

std::string device_kind(const nlohmann::json& fp) {
  auto str = [&](const char* k) {
    return fp.is_object() && fp.contains(k) && fp[k].is_string() ? fp[k].get<std::string>()
                                                                 : std::string();
  };
  const std::string device = str("device"), name = str("device_name");
  if (device.rfind("cpu", 0) == 0) return "cpu";
  return name.empty() ? device : name;
}

std::optional<std::string> preset_device_kind(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# fingerprint:", 0) != 0) continue;
    const auto at = line.find("(device ");
    if (at == std::string::npos) return std::nullopt;
    const std::string rest = line.substr(at + 8);
    const std::string device = rest.substr(0, rest.find_first_of(" ,)"));
    if (device.rfind("cpu", 0) == 0) return std::string("cpu");
    const auto q1 = rest.find('\'');
    const auto q2 = q1 == std::string::npos ? q1 : rest.find('\'', q1 + 1);
    if (q2 != std::string::npos && q2 > q1 + 1) return rest.substr(q1 + 1, q2 - q1 - 1);
    return device;
  }
  return std::nullopt;
}

std::string host_device_kind(Store* store, const Manifest& manifest) {
  if (store) {
    if (auto c = store->latest_campaign(false); c && c->environment_id) {
      if (const auto env = store->environment(*c->environment_id)) {
        std::string kind = device_kind(env->fingerprint);
        if (!kind.empty()) return kind;
      }
    }
  }
  const bool cuda_build = manifest.build.is_object() && manifest.build.value("cuda", false);
  return cuda_build && detect_gpus() > 0 ? "cuda" : "cpu";
}

bool same_device_kind(const std::string& preset_kind, const std::string& host_kind) {
  if (preset_kind == host_kind) return true;
  if (preset_kind == "cpu" || host_kind == "cpu") return false;
  return preset_kind == "cuda" || host_kind == "cuda";
}

std::string skipped_reason(const std::string& preset_kind, const std::string& host_kind) {
  return "skipped: measured on " + preset_kind + ", this host is " + host_kind;
}

}  // namespace sg::agent
