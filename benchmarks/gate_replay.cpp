// speedgate-speed-replay: the speed rule (agent/gate/speed_stats.hpp) over recorded pairs
// (benchmarks/gate/record_pairs.py). Each evaluation's pairs are replayed in order and the
// rule stops where a campaign would; prints how often it accepted, rejected or stayed
// inconclusive, and the pairs it used; beside it the spread of the recording's log-ratios
// and what the rule it replaced (median of the first 3 pair ratios above 1 + min effect)
// would have accepted. --cand-scale F multiplies every candidate step time by F: the rule's
// power at another true effect on the same recorded noise (labelled as such in the table).
// A measurement tool, not a test.
//   speedgate-speed-replay [--min-effect F] [--repeats N] [--max-repeats N] [--cand-scale F]
//   FILE...
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
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

double sd(const std::vector<double>& x) {
  if (x.size() < 2) return 0;
  double m = 0, ss = 0;
  for (double v : x) m += v;
  m /= static_cast<double>(x.size());
  for (double v : x) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(x.size() - 1));
}

// The rule before issue 26: accepted when the median of the first three pair ratios
// cleared 1 + min effect, whatever their spread.
bool old_rule_accepts(const std::vector<SpeedPair>& pairs, double min_effect) {
  std::vector<double> ratios;
  for (std::size_t i = 0; i < pairs.size() && i < 3; ++i)
    ratios.push_back(pairs[i].base_step_s / pairs[i].cand_step_s);
  return !ratios.empty() && median(ratios) > 1 + min_effect;
}

bool parse_args(int argc, char** argv, SpeedRule& rule, double& cand_scale,
                std::vector<std::string>& files) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--min-effect" || a == "--repeats" || a == "--max-repeats" || a == "--cand-scale") &&
        i + 1 < argc) {
      const std::string v = argv[++i];
      try {
        if (a == "--min-effect")
          rule.min_effect = std::stod(v);
        else if (a == "--cand-scale")
          cand_scale = std::stod(v);
        else if (a == "--repeats")
          rule.min_pairs = std::stoi(v);
        else
          rule.max_pairs = std::stoi(v);
      } catch (const std::exception&) {
        std::fprintf(stderr, "speedgate-speed-replay: %s needs a number, got '%s'\n", a.c_str(),
                     v.c_str());
        return false;
      }
      if (!(cand_scale > 0) || !std::isfinite(cand_scale)) {
        std::fprintf(stderr, "speedgate-speed-replay: --cand-scale must be a positive number\n");
        return false;
      }
    } else if (!a.empty() && a[0] != '-') {
      files.push_back(a);
    } else {
      std::fprintf(stderr,
                   "usage: speedgate-speed-replay [--min-effect F] [--repeats N] [--max-repeats N] "
                   "[--cand-scale F] FILE...\n");
      return false;
    }
  }
  if (files.empty()) std::fprintf(stderr, "speedgate-speed-replay: no recording given\n");
  return !files.empty();
}

}  // namespace

int main(int argc, char** argv) {
  SpeedRule rule;
  double cand_scale = 1;
  std::vector<std::string> files;
  if (!parse_args(argc, argv, rule, cand_scale, files)) return 2;
  fmt::print("rule: lower bound of the one-sided 95 % interval >= {:.3f}x, {}..{} pairs\n\n",
             1 + rule.min_effect, rule.min_pairs, rule.max_pairs);
  fmt::print(
      "| recording | condition | true effect | evaluations | accepted | not faster | inconclusive "
      "| "
      "mean pairs | median speedup | sd of log-ratios | old rule accepted | interval (one "
      "evaluation) |\n"
      "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
  for (const auto& f : files) {
    std::ifstream in(f);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("evaluations")) {
      std::fprintf(stderr, "speedgate-speed-replay: %s: not a recording\n", f.c_str());
      return 2;
    }
    int accepted = 0, rejected = 0, open = 0, pairs_used = 0, old_accepted = 0;
    std::vector<double> speedups, log_ratios;
    std::string interval = "—";
    for (const auto& ev : j["evaluations"]) {
      std::vector<SpeedPair> pairs;
      for (const auto& p : ev) {
        pairs.push_back({steady_step_seconds(steps_of(p.at("base"))),
                         cand_scale * steady_step_seconds(steps_of(p.at("cand")))});
      }
      for (const auto& p : pairs) log_ratios.push_back(std::log(p.base_step_s / p.cand_step_s));
      old_accepted += old_rule_accepts(pairs, rule.min_effect);
      const SpeedInterval v = replay_speed(pairs, rule);
      interval = v.text();
      pairs_used += v.pairs;
      speedups.push_back(v.speedup);
      if (v.call == SpeedCall::faster)
        ++accepted;
      else if (v.call == SpeedCall::not_faster)
        ++rejected;
      else
        ++open;
    }
    const int n = static_cast<int>(j["evaluations"].size());
    fmt::print(
        "| {} | {} | {} | {} | {} ({:.0f} %) | {} | {} | {:.1f} | {:.3f}x | {:.3f} | {} ({:.0f} %) "
        "| {} |\n",
        f, j.value("condition", std::string("?")),
        cand_scale == 1 ? j.value("effect", std::string("?"))
                        : fmt::format("{}, candidate times x{:.4f}",
                                      j.value("effect", std::string("?")), cand_scale),
        n, accepted, n ? 100.0 * accepted / n : 0.0, rejected, open,
        n ? static_cast<double>(pairs_used) / n : 0.0, median(speedups), sd(log_ratios),
        old_accepted, n ? 100.0 * old_accepted / n : 0.0, n == 1 ? interval : std::string("—"));
  }
  return 0;
}
