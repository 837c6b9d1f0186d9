// Smoke tests: both binaries start, `describe --json` emits a valid manifest, and the
// controller binary carries no LibTorch (the CMake check proves the link line; this
// proves the result).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "integration/run_command.hpp"

namespace sg::test {
namespace {

TEST(Smoke, ControllerHelpStartsAndExitsZero) {
  const auto r = run_command(bin("speedgate") + " --help 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("speedgate"), std::string::npos) << r.out;
}

TEST(Smoke, ControllerRejectsUnknownSubcommandWithExit2) {
  const auto r = run_command(bin("speedgate") + " no-such-command 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
}

TEST(Smoke, TrainerDescribeEmitsManifestJson) {
  const auto r = run_command(bin("speedgate-train") + " describe --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto manifest = nlohmann::json::parse(r.out);  // throws (test fails) when invalid
  EXPECT_EQ(manifest.at("protocol").get<int>(), 1);
  ASSERT_TRUE(manifest.at("switches").is_array());
  EXPECT_FALSE(manifest.at("switches").empty());
  ASSERT_TRUE(manifest.at("workloads").is_array());
  for (const auto& sw : manifest.at("switches")) {
    EXPECT_EQ(sw.at("env").get<std::string>(), "SG_" + sw.at("name").get<std::string>());
    const auto identity = sw.at("identity").get<std::string>();
    EXPECT_TRUE(identity == "bitwise" || identity == "tolerance") << sw.dump();
  }
}

TEST(Smoke, TrainerRejectsBadUsageWithExit2) {
  const auto r = run_command(bin("speedgate-train") + " run --steps notanumber 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
}

TEST(Smoke, ControllerBinaryDoesNotLoadLibTorch) {
  const auto r = run_command("ldd " + bin("speedgate"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("libtorch"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("libc10"), std::string::npos) << r.out;
  const auto t = run_command("ldd " + bin("speedgate-train"));
  EXPECT_NE(t.out.find("libtorch"), std::string::npos) << "sanity: the trainer does load LibTorch";
}

}  // namespace
}  // namespace sg::test
