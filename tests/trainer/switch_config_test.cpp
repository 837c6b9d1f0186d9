// The switch table and its validation: one table, every switch documented, values
// checked against the domain, requires enforced, presets validated whole.
#include "trainer/switches/switch_config.hpp"
#include "trainer/errors.hpp"
#include "trainer/switches/switch_table.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace sg::trainer {
namespace {

std::string write(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/sg_switch_test_" + name;
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::map<std::string, std::string>& env,
                     const std::string& preset = "") {
  try {
    resolve_switches(env, preset);
  } catch (const BadInputError& e) {
    return e.what();
  }
  return "";
}

TEST(SwitchTable, EverySwitchIsCompleteAndDefaultsAreInDomain) {
  for (const auto& s : switch_table()) {
    EXPECT_FALSE(s.doc.empty()) << s.name;
    EXPECT_TRUE(static_cast<bool>(s.apply)) << s.name;
    EXPECT_FALSE(s.values.empty()) << s.name;
    if (s.type != SwitchType::kInt) {
      EXPECT_NE(std::find(s.values.begin(), s.values.end(), s.default_value), s.values.end())
          << s.name;
    }
    for (const auto& req : s.requires) {
      EXPECT_NE(find_switch(req.substr(0, req.find('='))), nullptr)
          << s.name << " requires " << req;
    }
  }
}

TEST(SwitchTable, DefaultsResolveToTheStructDefaults) {
  const Switches sw = resolve_switches({}, "");
  const Switches plain;
  EXPECT_EQ(sw.text_cache, plain.text_cache);
  EXPECT_EQ(sw.ckpt_layers, -1);
  EXPECT_EQ(sw.data_workers, plain.data_workers);
  EXPECT_EQ(sw.attn_backend, "math");
  EXPECT_EQ(sw.resolved.size(), switch_table().size());
}

TEST(SwitchConfig, AppliesValidValues) {
  const Switches sw = resolve_switches(
      {{"SG_TEXT_CACHE", "1"}, {"SG_CONTEXT_TRUNC", "1"}, {"SG_CKPT_LAYERS", "4"}}, "");
  EXPECT_TRUE(sw.text_cache);
  EXPECT_TRUE(sw.context_trunc);
  EXPECT_EQ(sw.ckpt_layers, 4);
}

TEST(SwitchConfig, RejectsUnknownBadAndUnmet) {
  EXPECT_NE(error_of({{"SG_NOPE", "1"}}).find("SG_NOPE"), std::string::npos);
  EXPECT_NE(error_of({{"SG_FAST_INPUT", "yes"}}).find("SG_FAST_INPUT"), std::string::npos);
  EXPECT_NE(error_of({{"SG_DATA_WORKERS", "-1"}}).find("SG_DATA_WORKERS"), std::string::npos);
  EXPECT_NE(error_of({{"SG_TEXT_MISS_FAST", "1"}}).find("requires SG_TEXT_CACHE=1"),
            std::string::npos);
  EXPECT_EQ(error_of({{"SG_TEXT_CACHE", "1"}, {"SG_TEXT_MISS_FAST", "1"}}), "");
}

TEST(SwitchConfig, UnavailableSwitchOnlyAcceptsItsDefault) {
  for (const auto& s : switch_table()) {
    if (s.unavailable_reason.empty()) continue;
    EXPECT_EQ(error_of({{s.env(), s.default_value}}), "") << s.name;
    for (const auto& v : s.values) {
      if (v != s.default_value)
        EXPECT_NE(error_of({{s.env(), v}}).find("unavailable"), std::string::npos) << s.name;
    }
  }
}

TEST(Preset, ValidatesWholeFileAndNamesLine) {
  const auto ok = write("ok.env", "# provenance: campaign 1\n\nSG_TEXT_CACHE=1\nSG_FAST_INPUT=1\n");
  EXPECT_EQ(read_preset(ok).size(), 2u);
  EXPECT_NE(error_of({}, write("b1.env", "SG_TEXT_CACHE=1\nSG_BOGUS=1\n")).find("b1.env:2"),
            std::string::npos);
  EXPECT_NE(error_of({}, write("b2.env", "SG_TEXT_CACHE\n")).find("b2.env:1"), std::string::npos);
  EXPECT_NE(error_of({}, write("b3.env", "SG_TEXT_CACHE=1\nSG_TEXT_CACHE=0\n")).find("b3.env:2"),
            std::string::npos);
  EXPECT_NE(error_of({}, write("b4.env", "sg_text_cache=1\n")).find("b4.env:1"), std::string::npos);
  EXPECT_NE(error_of({}, "/nonexistent/preset.env").find("cannot open"), std::string::npos);
}

TEST(Preset, EnvironmentWinsOverPreset) {
  const auto p = write("win.env", "SG_CKPT_LAYERS=4\n");
  EXPECT_EQ(resolve_switches({}, p).ckpt_layers, 4);
  EXPECT_EQ(resolve_switches({{"SG_CKPT_LAYERS", "0"}}, p).ckpt_layers, 0);
}

}  // namespace
}  // namespace sg::trainer
