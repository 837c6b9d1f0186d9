// Dashboard benchmark (not a test): builds a store with N trials (default 10,000),
// serves it in-process and times, over repeats, the requests the page makes (HTML,
// script, style, Chart.js and every /api/v1 call of the first view). Prints medians.
// Usage: speedgate-dashboard-bench [TRIALS] [DB_PATH]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "agent/dashboard/server.hpp"
#include "benchmarks/http_get.hpp"
#include "benchmarks/synthetic_store.hpp"

int main(int argc, char** argv) {
  const int trials = argc > 1 ? std::stoi(argv[1]) : 10000;
  const std::string db = argc > 2 ? argv[2] : "/tmp/speedgate-dashboard-bench.db";
  std::filesystem::remove(db);
  sg::bench::SyntheticStoreSpec spec;
  spec.campaigns = 1;
  spec.evaluations_per_campaign = trials;
  sg::bench::write_synthetic_store(db, spec);
  sg::agent::dashboard::Server server(db, {"127.0.0.1", 0});
  const std::vector<std::string> page = {"/", "/static/style.css", "/static/chart.min.js",
                                         "/static/app.js", "/api/v1/campaigns", "/api/v1/series/presets",
                                         "/api/v1/campaigns/1/trials", "/api/v1/campaigns/1/frontier",
                                         "/api/v1/campaigns/1/projections", "/api/v1/campaigns/1/presets"};
  constexpr int kRepeats = 15;
  std::printf("%-36s %10s %12s\n", "request", "median ms", "bytes");
  double total = 0;
  for (const auto& url : page) {
    std::vector<double> ms;
    std::size_t bytes = 0;
    for (int i = 0; i < kRepeats; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto reply = sg::bench::http_get(server.port(), url);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      if (reply.status != 200) {
        std::fprintf(stderr, "%s: HTTP %d\n", url.c_str(), reply.status);
        return 1;
      }
      bytes = reply.body.size();
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%-36s %10.2f %12zu\n", url.c_str(), ms[ms.size() / 2], bytes);
    total += ms[ms.size() / 2];
  }
  std::printf("%-36s %10.2f   (%d trials, sequential; the page fetches the API calls in parallel)\n",
              "sum of medians", total, trials);
  return 0;
}
