// The mutation suites' campaign (mutation_suite_test.cpp, trainer_mutation_suite_test.cpp):
// `speedgate tune` with the screen plan at 4 steps (= the screen's, so tolerance verdicts
// are also confirmed at the 16-step horizon), one thread, seeds 0 and 1000, two pairs (speed
// is not asserted) and two noise pairs, then `report --json`; each evaluation by config key.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "integration/run_command.hpp"

namespace sg::test {

struct MutationCampaign {
  nlohmann::json summary;  // report --json
  std::map<std::string, nlohmann::json> by_config;
  std::string report_text;  // for failure messages
  // The evaluation of `key`, null when it was not evaluated.
  nlohmann::json verdict(const std::string& key) const {
    auto it = by_config.find(key);
    return it == by_config.end() ? nlohmann::json() : it->second;
  }
};

// `env` prefixes the command (the mutants' variable), `target` names workload, size and
// trainer. Presets go to dir/presets. Fails the calling test (and returns nothing) when the
// campaign or the report does not exit 0.
inline void run_mutation_campaign(const std::string& env, const std::string& target,
                                  const std::filesystem::path& dir, MutationCampaign* out) {
  const std::string db = (dir / "store.db").string();
  const std::string log = (dir / "tune.log").string();
  const auto tune =
      run_command(env + " " + bin("speedgate") + " tune " + target + " --db " + db +
                  " --steps 4 --screen-steps 4 --plan screen --threads 1 --seeds 0,1000 "
                  "--repeats 2 --max-repeats 2 --noise-pairs 2 --presets-out " +
                  (dir / "presets").string() + " 2>" + log);
  ASSERT_EQ(tune.exit_code, 0) << run_command("tail -40 " + log).out;
  const auto report = run_command(bin("speedgate") + " report --json --db " + db);
  ASSERT_EQ(report.exit_code, 0) << report.out;
  out->report_text = report.out;
  out->summary = nlohmann::json::parse(report.out);
  for (const auto& e : out->summary.at("evaluations")) {
    out->by_config[e.at("config_key").get<std::string>()] = e;
  }
}

// Every one of `keys` was evaluated and failed the tolerance gate by the rounding band.
inline void expect_rounding_band_failures(const MutationCampaign& c,
                                          const std::vector<std::string>& keys) {
  for (const auto& key : keys) {
    const auto e = c.verdict(key);
    ASSERT_FALSE(e.is_null()) << key << " was not evaluated";
    EXPECT_EQ(e.at("disposition"), "gate_failed") << key << ": " << e.at("reason");
    EXPECT_EQ(e.at("gate_class"), "tolerance") << key;
    EXPECT_NE(e.at("reason").get<std::string>().find("rounding band"), std::string::npos)
        << e.at("reason");
  }
}

// Each of `keys`, a tolerance switch that passed, was judged against the rounding band, says
// how sensitive that was, and was confirmed at the horizon.
inline void expect_rounding_band_passes(const MutationCampaign& c,
                                        const std::vector<std::string>& keys) {
  for (const auto& key : keys) {
    const std::string reason = c.verdict(key).at("reason");
    EXPECT_NE(reason.find("inside 2x the rounding band"), std::string::npos) << reason;
    EXPECT_NE(reason.find("sensitivity"), std::string::npos) << reason;
    EXPECT_NE(reason.find("16-step horizon"), std::string::npos) << reason;
  }
}

}  // namespace sg::test
