// Dashboard benchmark (not a test): builds a store with N trials (default 10,000),
// serves it in-process and times, over repeats, the requests the page makes (HTML,
// script, style, Chart.js and every /api/v1 call of the first view). Prints medians.
// With Chromium installed it also loads the page headless and reports the page's own
// ready time (navigation start until every chart and the first table page are drawn).
// Usage: speedgate-dashboard-bench [TRIALS] [DB_PATH]
#include <sys/wait.h>
#include <unistd.h>

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

// One headless Chromium load of the dashboard: the page's own performance.now() when
// it has drawn every chart and the first table page (it logs "dashboard ready in N ms"
// to the console, which Chromium prints to stderr). Real time, not virtual time.
// Returns -1 when the page never reported ready.
double chromium_ready_ms(const std::string& url, const std::string& profile) {
  const std::string cmd =
      "timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-background-networking "
      "--disable-dev-shm-usage --user-data-dir=" + profile + " --window-size=1400,2000 "
      "--enable-logging=stderr --v=0 '" + url + "' 2>&1 | { grep -m1 -o 'dashboard ready in [0-9]* ms'; "
      "pkill -f -- '" + profile + "'; cat >/dev/null; }";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n = 0;
  while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (p) ::pclose(p);
  const auto at = out.find("ready in ");
  return at == std::string::npos ? -1 : std::stod(out.substr(at + 9));
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
  const std::vector<std::string> page = {
      "/", "/static/style.css", "/static/chart.min.js", "/static/app.js", "/api/v1/campaigns",
      "/api/v1/series/presets", "/api/v1/campaigns/1/series", "/api/v1/campaigns/1/presets",
      "/api/v1/campaigns/1/trials?offset=0&limit=200&disposition=&q=",
      "/api/v1/campaigns/1/trials"};  // the last: the whole list, which the page never loads
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
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/";
  // Cold: a new browser profile per load (no cached Chart.js). Warm: one profile, as a
  // person reloading the page; the embedded static files may be cached, data never is.
  std::vector<double> cold, warm;
  const std::string warm_profile = "/tmp/sg-bench-warm-" + std::to_string(::getpid());
  for (int i = 0; i < 7; ++i) {
    cold.push_back(chromium_ready_ms(url, "/tmp/sg-bench-cold-" + std::to_string(::getpid()) + "-" + std::to_string(i)));
    warm.push_back(chromium_ready_ms(url, warm_profile));
  }
  warm.erase(warm.begin());  // the first load with that profile is a cold one
  for (const auto* v : {&cold, &warm}) {
    if (std::count(v->begin(), v->end(), -1.0) > 0) {
      std::fprintf(stderr, "chromium: the dashboard did not report ready\n");
      return 1;
    }
  }
  std::printf("chromium: dashboard ready (navigation start -> charts and first table page drawn):\n"
              "  cold profile: median %.0f ms over %zu loads\n  warm profile: median %.0f ms over %zu loads\n",
              median(cold), cold.size(), median(warm), warm.size());
  std::system(("rm -rf /tmp/sg-bench-cold-" + std::to_string(::getpid()) + "-* " + warm_profile).c_str());
  return 0;
}
