// The committed presets (presets/*.env, emitted from the H200 campaign's DB) name only
// switches this trainer reads: each key is in the one switch table, applies to the
// preset's workload, is inside its domain, has its requires met inside the preset, and —
// for every switch this build can run — the trainer resolves it to exactly that value.
// CUDA-only switches are resolved for real by GpuPresets.CommittedPresetsRunOnTheGpu.
#include "trainer/errors.hpp"
#include "trainer/switches/switch_config.hpp"
#include "trainer/switches/switch_table.hpp"
#include "trainer/workload/workload.hpp"

#include "kernels/common/registry.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace sg::trainer {
namespace {

struct CommittedPreset {
  std::string path, workload;
  std::map<std::string, std::string> values;  // SG_NAME -> value
};

std::vector<CommittedPreset> committed_presets() {
  std::vector<CommittedPreset> out;
  const std::filesystem::path dir = std::filesystem::path(SPEEDGATE_SOURCE_DIR) / "presets";
  if (!std::filesystem::exists(dir)) return out;
  const std::regex campaign_line(R"(^# campaign: \d+ \((\S+) )");
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".env") continue;
    CommittedPreset p;
    p.path = entry.path().string();
    std::ifstream in(p.path);
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (std::regex_search(line, m, campaign_line)) p.workload = m[1];
      if (line.empty() || line[0] == '#') continue;
      const auto eq = line.find('=');
      if (eq != std::string::npos) p.values[line.substr(0, eq)] = line.substr(eq + 1);
    }
    out.push_back(p);
  }
  return out;
}

bool in_domain(const SwitchSpec& s, const std::string& v) {
  if (s.type == SwitchType::kInt) {
    try {
      const long long n = std::stoll(v);
      return n >= s.min && n <= s.max;
    } catch (const std::exception&) {
      return false;
    }
  }
  return std::find(s.values.begin(), s.values.end(), v) != s.values.end();
}

TEST(CommittedPresets, FastAndFast80gbAreCommitted) {
  std::vector<std::string> names;
  for (const auto& p : committed_presets())
    names.push_back(std::filesystem::path(p.path).filename().string());
  EXPECT_NE(std::find(names.begin(), names.end(), "fast.env"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "fast_80gb.env"), names.end());
}

TEST(CommittedPresets, EverySwitchIsReadByTheTrainer) {
  for (const auto& p : committed_presets()) {
    SCOPED_TRACE(p.path);
    ASSERT_FALSE(p.workload.empty()) << "no '# campaign: N (workload size ...' provenance line";
    ASSERT_FALSE(p.values.empty());
    std::map<std::string, std::string> runnable;  // the switches this build can run
    for (const auto& [env, value] : p.values) {
      ASSERT_EQ(env.rfind("SG_", 0), 0u) << env;
      if (env.rfind("SG_KERNEL_", 0) == 0) {  // a kernel family's variant (docs/kernels.md)
        const auto& fam = sg::kernels::family(env.substr(10));  // throws for an unknown family
        sg::kernels::ParamValues params;
        EXPECT_EQ(sg::kernels::parse_params(fam, value, &params), "") << env << "=" << value;
        auto on = p.values.find("SG_" + fam.switch_name);
        EXPECT_TRUE(on != p.values.end() && on->second == "1")
            << env << " without SG_" << fam.switch_name << "=1";
        const SwitchSpec* sw_spec = find_switch(fam.switch_name);
        ASSERT_NE(sw_spec, nullptr) << fam.switch_name;
        if (sw_spec->unavailable_reason.empty()) runnable[env] = value;  // the family runs here
        continue;
      }
      const SwitchSpec* s = find_switch(env.substr(3));
      ASSERT_NE(s, nullptr) << env << " is not in the switch table";
      EXPECT_TRUE(workload_named(p.workload).reads_switch(*s))
          << env << " is not read by workload " << p.workload;
      EXPECT_TRUE(in_domain(*s, value)) << env << "=" << value;
      for (const auto& req : s->requires) {
        const auto eq = req.find('=');
        auto it = p.values.find("SG_" + req.substr(0, eq));
        EXPECT_TRUE(it != p.values.end() && it->second == req.substr(eq + 1))
            << env << " requires " << req;
      }
      if (s->unavailable_reason.empty()) runnable[env] = value;
    }
    // The trainer's own resolution (what a run reads) stores exactly these values.
    std::map<std::string, std::string> env_only = runnable;
    Switches sw;
    ASSERT_NO_THROW(sw = resolve_switches(env_only, "")) << "a runnable subset must resolve";
    for (const auto& [env, value] : runnable) {
      if (env.rfind("SG_KERNEL_", 0) == 0) {
        EXPECT_EQ(sw.kernel_params.at(env.substr(10)), value) << env;
      } else {
        EXPECT_EQ(sw.resolved.at(env), value) << env;
      }
    }
    ASSERT_NO_THROW(check_switches_read(sw, workload_named(p.workload)));
  }
}

}  // namespace
}  // namespace sg::trainer
