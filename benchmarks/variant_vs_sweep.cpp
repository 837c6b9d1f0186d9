// speedgate-variant-gap --db DB --sweep SWEEP.json [--campaign ID] [--json]
// Per kernel family: the variant parameters a campaign chose (its presets, else its best
// accepted evaluation) against the best of the exhaustive sweep that
// `speedgate-kernels-bench --json` wrote, and the gap in percent. Exit 0 when every
// compared family is within 5 % (families unavailable or never chosen are reported, not
// failed), 1 when one is not, 2 for bad input.
#include "benchmarks/variant_gap.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "speedgate-variant-gap: %s\n"
               "usage: speedgate-variant-gap --db DB --sweep SWEEP.json [--campaign ID] [--json]\n"
               "  SWEEP.json: from `speedgate-kernels-bench --json SWEEP.json` on the same GPU\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string db, sweep_path;
  std::optional<std::int64_t> campaign;
  bool as_json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--db" || a == "--sweep" || a == "--campaign") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--db") db = v;
      if (a == "--sweep") sweep_path = v;
      if (a == "--campaign") {
        try {
          campaign = std::stoll(v);
        } catch (const std::exception&) {
          return usage(("--campaign needs an integer id, got '" + v + "'").c_str());
        }
      }
    } else if (a == "--json") {
      as_json = true;
    } else if (a == "--help" || a == "-h") {
      usage("compare a campaign's kernel variants with an exhaustive sweep");
      return 0;
    } else {
      return usage(("unknown argument '" + a + "'").c_str());
    }
  }
  if (db.empty() || sweep_path.empty()) return usage("--db and --sweep are required");
  std::ifstream in(sweep_path);
  if (!in) return usage(("cannot read " + sweep_path).c_str());
  std::stringstream text;
  text << in.rdbuf();
  const auto sweep = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (sweep.is_discarded()) return usage((sweep_path + " is not JSON").c_str());
  try {
    if (!std::ifstream(db)) return usage(("no store at " + db).c_str());
    sg::agent::Store store(db, /*read_only=*/true);
    const auto report = sg::bench::variant_gap(store, campaign, sweep);
    if (as_json) {
      std::cout << sg::bench::render_gap_json(report).dump(2) << "\n";
    } else {
      std::cout << sg::bench::render_gap_text(report);
    }
    return sg::bench::gaps_within_limit(report) ? 0 : 1;
  } catch (const std::exception& e) {
    return usage(e.what());
  }
}
