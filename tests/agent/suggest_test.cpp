// common/suggest/suggest.hpp and cli_suggest.hpp: did-you-mean for names users type.
#include "common/suggest/suggest.hpp"

#include <gtest/gtest.h>

#include "common/suggest/cli_suggest.hpp"

namespace sg {
namespace {

TEST(Suggest, EditDistanceCountsAnAdjacentSwapOnce) {
  EXPECT_EQ(edit_distance("trails", "trials"), 1u);
  EXPECT_EQ(edit_distance("tunee", "tune"), 1u);
  EXPECT_EQ(edit_distance("WAM", "wam"), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(Suggest, ClosestNamesOrFewerThanAThirdOfTheWordAway) {
  const std::vector<std::string> names = {"wam", "lm", "lm_osft"};
  EXPECT_EQ(did_you_mean("wma", names), "; did you mean 'wam'?");
  EXPECT_EQ(did_you_mean("lm_oft", names), "; did you mean 'lm_osft'?");
  EXPECT_EQ(did_you_mean("resnet", names), "");
  EXPECT_EQ(did_you_mean("budget-trails", {"budget-trials", "budget-minutes"}, "--"),
            "; did you mean '--budget-trials'?");
}

struct CliSuggestTest : ::testing::Test {
  CLI::App app{"t"};
  int trials = 0;
  CLI::App* tune = app.add_subcommand("tune", "");
  CLI::App* presets = app.add_subcommand("presets", "");
  void SetUp() override {
    tune->add_option("--budget-trials", trials, "");
    presets->add_subcommand("emit", "");
    presets->add_subcommand("check", "");
  }
  std::string explain(std::vector<const char*> argv) {
    argv.insert(argv.begin(), "speedgate");
    return explain_cli_error(app, static_cast<int>(argv.size()), argv.data(), "fallback");
  }
};

TEST_F(CliSuggestTest, UnknownCommandNamesTheClosestAndListsAll) {
  EXPECT_EQ(explain({"tunee"}),
            "unknown command 'tunee'; did you mean 'tune'? (commands: tune, presets)");
  EXPECT_EQ(explain({"presets", "emitt"}),
            "unknown command 'emitt'; did you mean 'emit'? (commands: emit, check)");
}

TEST_F(CliSuggestTest, UnknownFlagNamesTheClosest) {
  EXPECT_EQ(explain({"tune", "--budget-trails", "5"}),
            "unknown flag --budget-trails; did you mean '--budget-trials'? (`speedgate tune "
            "--help` lists them)");
  EXPECT_EQ(explain({"tune", "--budget-trials", "5"}), "fallback");
}

}  // namespace
}  // namespace sg
