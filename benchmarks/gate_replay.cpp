// speedgate-speed-replay: the speed rule (agent/gate/speed_stats.hpp) over recorded pairs
// (benchmarks/gate/record_pairs.py). Each evaluation's pairs are replayed in order and the
// rule stops where a campaign would; prints how often it accepted, rejected or stayed
// inconclusive, and the pairs it used. A measurement tool, not a test.
//   speedgate-speed-replay [--min-effect F] [--repeats N] [--max-repeats N] FILE...
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agent/gate/gate.hpp"
#include "agent/gate/speed_stats.hpp"

using namespace sg::agent;

namespace {

std::vector<StepRecord> steps_of(const nlohmann::json& seconds) {
  std::vector<StepRecord> out;
  for (const auto& s : seconds) {
    StepRecord r;
    r.seconds = s.get<double>();
    out.push_back(r);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  SpeedRule rule;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--min-effect" || a == "--repeats" || a == "--max-repeats") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--min-effect") rule.min_effect = std::stod(v);
      else if (a == "--repeats") rule.min_pairs = std::stoi(v);
      else rule.max_pairs = std::stoi(v);
    } else if (!a.empty() && a[0] != '-') {
      files.push_back(a);
    } else {
      std::fprintf(stderr, "usage: speedgate-speed-replay [--min-effect F] [--repeats N] [--max-repeats N] FILE...\n");
      return 2;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "speedgate-speed-replay: no recording given\n");
    return 2;
  }
  fmt::print("rule: lower bound of the one-sided 95 % interval >= {:.3f}x, {}..{} pairs\n\n", 1 + rule.min_effect,
             rule.min_pairs, rule.max_pairs);
  fmt::print("| recording | condition | true effect | evaluations | accepted | not faster | inconclusive | "
             "mean pairs | median speedup |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& f : files) {
    std::ifstream in(f);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("evaluations")) {
      std::fprintf(stderr, "speedgate-speed-replay: %s: not a recording\n", f.c_str());
      return 2;
    }
    int accepted = 0, rejected = 0, open = 0, pairs_used = 0;
    std::vector<double> speedups;
    for (const auto& ev : j["evaluations"]) {
      std::vector<SpeedPair> pairs;
      for (const auto& p : ev) {
        pairs.push_back({steady_step_seconds(steps_of(p.at("base"))), steady_step_seconds(steps_of(p.at("cand")))});
      }
      const SpeedInterval v = replay_speed(pairs, rule);
      pairs_used += v.pairs;
      speedups.push_back(v.speedup);
      if (v.call == SpeedCall::faster) ++accepted;
      else if (v.call == SpeedCall::not_faster) ++rejected;
      else ++open;
    }
    const int n = static_cast<int>(j["evaluations"].size());
    fmt::print("| {} | {} | {} | {} | {} ({:.0f} %) | {} | {} | {:.1f} | {:.3f}x |\n", f,
               j.value("condition", std::string("?")), j.value("effect", std::string("?")), n, accepted,
               n ? 100.0 * accepted / n : 0.0, rejected, open, n ? static_cast<double>(pairs_used) / n : 0.0,
               median(speedups));
  }
  return 0;
}
