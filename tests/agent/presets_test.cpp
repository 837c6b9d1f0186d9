// Preset parsing and rendering against a manifest: strict, line-numbered errors.
#include "agent/presets/preset_file.hpp"

#include <gtest/gtest.h>

#include "agent/common/errors.hpp"
#include "agent/common/files.hpp"

namespace sg::agent {
namespace {

Manifest manifest() {
  auto text =
      read_file(std::string(SPEEDGATE_SOURCE_DIR) + "/tests/agent/data/recorded_manifest.json");
  return parse_manifest_text(text.value());
}

std::string first_error(const std::string& text) {
  PresetParse p = parse_preset(text, manifest());
  return p.errors.empty() ? std::string("<valid>") : p.errors.front();
}

TEST(PresetFile, ValidPresetParses) {
  PresetParse p = parse_preset("# provenance\n\nSG_A=1\nSG_W=4\n", manifest());
  ASSERT_TRUE(p.ok()) << p.errors.front();
  EXPECT_EQ(config_key(p.config), "A=1,W=4");
  ASSERT_EQ(p.comments.size(), 1u);
  EXPECT_EQ(p.comments[0], " provenance");
}

TEST(PresetFile, MissingFinalNewlineAcceptedCrRefused) {
  PresetParse p = parse_preset("SG_A=1\nSG_W=2", manifest());
  ASSERT_TRUE(p.ok()) << p.errors.front();
  EXPECT_EQ(p.config.at("W"), "2");
  EXPECT_NE(first_error("SG_A=1\r\nSG_W=2").find("line 1: contains a carriage return"),
            std::string::npos);
}

// The strictest rules of the controller's and the trainer's former parsers, now one
// (common/preset): each names its line.
TEST(PresetFile, WhitespaceAroundALineAndIndentedCommentsAreRefused) {
  EXPECT_NE(first_error("SG_A=1\nSG_W=2 \n").find("line 2: trailing whitespace"),
            std::string::npos);
  EXPECT_NE(first_error("# ok\n  # indented\n").find("line 2: leading whitespace"),
            std::string::npos);
  EXPECT_NE(first_error("\tSG_A=1\n").find("line 1: leading whitespace"), std::string::npos);
  EXPECT_NE(first_error("# note \n").find("line 1: trailing whitespace"), std::string::npos);
  EXPECT_NE(first_error(std::string("# a\0b\n", 6)).find("line 1: contains a NUL byte"),
            std::string::npos);
}

TEST(PresetSyntax, Utf8ValidatorRefusesOverlongSurrogatesAndBeyondU10ffff) {
  using preset::valid_utf8;
  for (const char* bad :
       {"\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf0\x80\x80\x80",
        "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\x80", "\xc3", "\xe2\x82", "\xff"}) {
    EXPECT_FALSE(valid_utf8(bad)) << "accepted " << ::testing::PrintToString(std::string(bad));
  }
  for (const char* good : {"caf\xc3\xa9", "\xe2\x82\xac", "\xed\x9f\xbf", "\xee\x80\x80",
                           "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "plain"}) {
    EXPECT_TRUE(valid_utf8(good)) << "refused " << ::testing::PrintToString(std::string(good));
  }
  EXPECT_NE(first_error("# \xed\xa0\x80\n").find("line 1: is not valid UTF-8"), std::string::npos);
}

TEST(PresetFile, DefaultValuesAreAllowedEvenForUnavailableSwitches) {
  EXPECT_TRUE(parse_preset("SG_U=0\n", manifest()).ok());
}

TEST(PresetFile, ErrorsNameTheLineAndTheProblem) {
  EXPECT_NE(first_error("SG_A=1\nSG_FOO=1\n").find("line 2: unknown switch SG_FOO"),
            std::string::npos);
  EXPECT_NE(first_error("SG_A=1\nSG_A=1\n").find("duplicate switch SG_A"), std::string::npos);
  EXPECT_NE(first_error("SG_W=99\n").find("outside its domain"), std::string::npos);
  EXPECT_NE(first_error("SG_A=2\n").find("outside its domain"), std::string::npos);
  EXPECT_NE(first_error("LD_PRELOAD=/tmp/x.so\n").find("not a switch"), std::string::npos);
  EXPECT_NE(first_error("PATH=/tmp\n").find("not a switch"), std::string::npos);
  EXPECT_NE(first_error("SG_C=1\n").find("requires A=1"), std::string::npos);
  EXPECT_NE(first_error("SG_U=1\n").find("unavailable"), std::string::npos);
  EXPECT_NE(first_error("  SG_A=1\n").find("leading whitespace"), std::string::npos);
  EXPECT_NE(first_error("SG_A\n").find("expected KEY=value"), std::string::npos);
  EXPECT_NE(first_error("export SG_A=1\n").find("not a variable name"), std::string::npos);
}

TEST(PresetFile, ShellMetacharactersAreNeverValues) {
  for (const char* v : {"SG_A=$X\n", "SG_A=\"1\"\n", "SG_A='1'\n", "SG_A=1 \n", "SG_A=1;rm -rf /\n",
                        "SG_A=`id`\n", "SG_W=4\\\n"}) {
    EXPECT_FALSE(parse_preset(v, manifest()).ok()) << v;
  }
}

TEST(PresetFile, BinaryAndHugeInputRejected) {
  EXPECT_NE(first_error(std::string("SG_A=1\0\n", 8)).find("NUL"), std::string::npos);
  EXPECT_NE(first_error("SG_A=\xff\xfe\n").find("UTF-8"), std::string::npos);
  EXPECT_NE(first_error("SG_A=" + std::string(5000, '1') + "\n").find("longer than"),
            std::string::npos);
  EXPECT_NE(first_error(std::string(kMaxPresetBytes + 1, '#')).find("larger than"),
            std::string::npos);
  EXPECT_TRUE(parse_preset("# caf\xc3\xa9\nSG_A=1\n", manifest()).ok())
      << "UTF-8 comments are fine";
}

TEST(PresetFile, RenderRoundTrips) {
  Manifest m = manifest();
  Config c = config_from_key("A=1,C=1,MEM=4,W=2");
  std::string text = render_preset({"campaign: 3", "trial ids: 1,2"}, c, m);
  EXPECT_EQ(text.rfind("# campaign: 3\n# trial ids: 1,2\n", 0), 0u);
  PresetParse p = parse_preset(text, m);
  ASSERT_TRUE(p.ok()) << p.errors.front();
  EXPECT_EQ(p.config, c);
}

TEST(Manifest, RejectsBadFieldsByName) {
  auto bad = [](const std::string& text) {
    try {
      parse_manifest_text(text);
      return std::string("<valid>");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  };
  EXPECT_NE(bad("not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(bad("{\"protocol\": 2}").find("protocol"), std::string::npos);
  std::string base =
      read_file(std::string(SPEEDGATE_SOURCE_DIR) + "/tests/agent/data/recorded_manifest.json")
          .value();
  auto j = nlohmann::json::parse(base);
  j["switches"][0]["type"] = "float";
  EXPECT_NE(bad(j.dump()).find("switches[0].type"), std::string::npos);
  j = nlohmann::json::parse(base);
  j["switches"][0]["env"] = "LD_PRELOAD";
  EXPECT_NE(bad(j.dump()).find("switches[0].env"), std::string::npos);
  j = nlohmann::json::parse(base);
  j["switches"][4]["values"].push_back("1 2");
  EXPECT_NE(bad(j.dump()).find("switches[4].values"), std::string::npos);
  j = nlohmann::json::parse(base);
  j["switches"][2]["requires"] = {"NOPE=1"};
  EXPECT_NE(bad(j.dump()).find("unknown switch"), std::string::npos);
  j = nlohmann::json::parse(base);
  j["switches"].push_back(j["switches"][0]);
  EXPECT_NE(bad(j.dump()).find("duplicate"), std::string::npos);
}

// Regression (found through fuzz/manifest_fuzz.cpp): optional fields of the wrong type
// escaped as nlohmann type_errors, 1e30 as an int was undefined behaviour, and a
// protocol of 2^32+1 wrapped to 1 and was accepted.
TEST(Manifest, WrongTypesAndHugeIntegersNameTheField) {
  auto bad = [](const nlohmann::json& j) {
    try {
      parse_manifest(j);
      return std::string("<valid>");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
  };
  const auto base = nlohmann::json::parse(
      read_file(std::string(SPEEDGATE_SOURCE_DIR) + "/tests/agent/data/recorded_manifest.json")
          .value());
  auto j = base;
  j["workloads"][0]["sizes"][0]["default_micro_batch"] = "x";
  EXPECT_NE(bad(j).find("workloads[0].sizes[0].default_micro_batch: not an integer"),
            std::string::npos)
      << bad(j);
  j = base;
  j["workloads"][0]["sizes"][0]["default_micro_batch"] = 1e30;
  EXPECT_NE(bad(j).find("default_micro_batch: not an integer"), std::string::npos) << bad(j);
  j = base;
  j["workloads"][0]["sizes"][0]["default_micro_batch"] = std::int64_t{1} << 40;
  EXPECT_NE(bad(j).find("default_micro_batch: integer out of range"), std::string::npos) << bad(j);
  j = base;
  j["workloads"][0]["sizes"][0]["trainable_params"] = "many";
  EXPECT_NE(bad(j).find("trainable_params"), std::string::npos) << bad(j);
  j = base;
  j["switches"][0]["available"] = "yes";
  EXPECT_NE(bad(j).find("switches[0].available: not true or false"), std::string::npos) << bad(j);
  j = base;
  j["switches"][0]["deterministic"] = 1;
  EXPECT_NE(bad(j).find("switches[0].deterministic"), std::string::npos) << bad(j);
  j = base;
  j["protocol"] = (std::int64_t{1} << 32) + 1;
  EXPECT_NE(bad(j).find("protocol"), std::string::npos) << bad(j);
  j = base;
  j["switches"][4]["max"] = std::uint64_t{1} << 63;
  EXPECT_NE(bad(j).find("switches[4].max: not an integer"), std::string::npos) << bad(j);
}

TEST(Manifest, NonDeterministicSwitchIsNotBitwise) {
  auto j = nlohmann::json::parse(
      read_file(std::string(SPEEDGATE_SOURCE_DIR) + "/tests/agent/data/recorded_manifest.json")
          .value());
  j["switches"][0]["deterministic"] = false;
  Manifest m = parse_manifest(j);
  EXPECT_FALSE(m.find_switch("A")->bitwise());
  EXPECT_TRUE(m.find_switch("B")->bitwise());
}

TEST(Config, RequiresAreClosedAndValidated) {
  Manifest m = manifest();
  Config c = config_from_key("C=1");
  EXPECT_NE(validate_config(c, m), std::nullopt);
  ASSERT_TRUE(close_requires(c, m));
  EXPECT_EQ(config_key(c), "A=1,C=1");
  EXPECT_EQ(validate_config(c, m), std::nullopt);
  Config conflict = config_from_key("A=0,C=1");
  EXPECT_FALSE(close_requires(conflict, m));
  EXPECT_EQ(config_env(config_from_key("W=2"), m),
            (std::vector<std::pair<std::string, std::string>>{{"SG_W", "2"}}));
}

}  // namespace
}  // namespace sg::agent
