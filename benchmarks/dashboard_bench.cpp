// Dashboard benchmark (not a test): builds a store with N trials (default 10,000),
// serves it in-process and times, over repeats, the requests the page makes (HTML,
// script, style, Chart.js and every /api/v1 call of the first view). Prints medians.
// With Chromium installed it also loads the page headless until the dashboard marks
// itself ready (all API data drawn), and reports the wall time minus that of loading
// a trivial page with the same browser flags (browser start-up excluded).
// Usage: speedgate-dashboard-bench [TRIALS] [DB_PATH]
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "agent/dashboard/server.hpp"
#include "benchmarks/http_get.hpp"
#include "benchmarks/synthetic_store.hpp"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Wall milliseconds of one headless Chromium load of `url`; sets `ready` when the DOM
// shows the dashboard finished drawing.
double chromium_load_ms(const std::string& url, bool* ready) {
  const std::string cmd =
      "timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking "
      "--disable-dev-shm-usage --user-data-dir=/tmp/sg-bench-profile --window-size=1400,2000 "
      "--virtual-time-budget=60000 --dump-dom '" + url + "' 2>/dev/null";
  const auto t0 = std::chrono::steady_clock::now();
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[65536];
  size_t n = 0;
  while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (p) ::pclose(p);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (ready) *ready = out.find("data-ready=\"yes\"") != std::string::npos;
  return ms;
}

}  // namespace

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
  if (std::system("command -v chromium >/dev/null 2>&1") != 0) return 0;
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  std::vector<double> page_ms, blank_ms;
  bool ready = true;
  for (int i = 0; i < 5; ++i) {
    bool ok = false;
    page_ms.push_back(chromium_load_ms(base + "/", &ok));
    ready = ready && ok;
    blank_ms.push_back(chromium_load_ms(base + "/static/style.css", nullptr));
  }
  std::printf("chromium: dashboard %.0f ms, trivial page %.0f ms (medians of 5), page cost %.0f ms%s\n",
              median(page_ms), median(blank_ms), median(page_ms) - median(blank_ms),
              ready ? "" : "  (WARNING: dashboard did not report ready)");
  return 0;
}
