// Dashboard benchmark (not a test): builds a store with N trials (default 10,000),
// serves it in-process and times, over repeats, the requests the page makes (HTML,
// script, style, Chart.js and every /api/v1 call of the first view). Prints medians.
// With Chromium installed it also loads the page headless and reports the page's own
// ready time: navigation start until the frame showing every chart (with its data) and
// the first table page has been produced. Each load starts a fresh headless Chromium,
// lets it finish its own start-up work (2.5 s on a data: page) and then navigates to
// the dashboard, as a person does in a browser that is already running; loads that
// navigate at once, while the browser still starts up, are reported separately.
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
#include "agent/store/fixtures/synthetic_store.hpp"
#include "benchmarks/http_get.hpp"

namespace {

struct Load {
  double ms = -1;      // -1: the page never reported ready
  std::string phases;  // the page's own breakdown: "script N, data N, drawn N"
};

// One headless Chromium load of the dashboard: the page's own performance.now() when
// the frame with every chart and the first table page is produced (it logs "dashboard
// ready in N ms (phases)" to the console, which Chromium prints to stderr). Real time,
// not virtual time. settle_ms > 0: open a data: page first and navigate from it to the
// dashboard after that long, so the browser's start-up work does not overlap the load.
// linger_ms > 0: keep the browser running that long after "ready" before it is killed, as
// a person's browser keeps running: it finishes writing its caches (the HTTP cache entry
// and V8's code cache for Chart.js, which Chromium writes after the script has run), which
// the next load of a warm profile reads. The ready time is the same either way.
Load chromium_load(const std::string& url, const std::string& profile, int settle_ms,
                   int linger_ms = 0) {
  const std::string target = settle_ms > 0
                                 ? "data:text/html,<script>setTimeout(()=>location.replace(\"" +
                                       url + "\")," + std::to_string(settle_ms) + ")</script>"
                                 : url;
  const std::string cmd =
      "timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-background-networking "
      "--disable-dev-shm-usage --user-data-dir=" +
      profile +
      " --window-size=1400,2000 "
      "--enable-logging=stderr --v=0 '" +
      target + "' 2>&1 | { grep -m1 -o 'dashboard ready in [0-9]* ms ([^)]*)'; " +
      (linger_ms > 0 ? "sleep " + std::to_string(linger_ms / 1000.0) + "; " : std::string()) +
      "pkill -f -- '" + profile + "'; cat >/dev/null; }";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n = 0;
  while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (p) ::pclose(p);
  Load load;
  const auto at = out.find("ready in ");
  if (at == std::string::npos) return load;
  load.ms = std::stod(out.substr(at + 9));
  const auto open = out.find('(', at);
  const auto close = out.find(')', at);
  if (open != std::string::npos && close != std::string::npos)
    load.phases = out.substr(open + 1, close - open - 1);
  return load;
}

// Median ready time of `loads` and the phases of that median load.
std::string summary(std::vector<Load> loads) {
  std::sort(loads.begin(), loads.end(), [](const Load& a, const Load& b) { return a.ms < b.ms; });
  const Load& m = loads[loads.size() / 2];
  return "median " + std::to_string(static_cast<int>(m.ms)) + " ms over " +
         std::to_string(loads.size()) + " loads (min " +
         std::to_string(static_cast<int>(loads.front().ms)) + ", max " +
         std::to_string(static_cast<int>(loads.back().ms)) + "; median load: " + m.phases + ")";
}

// Times each request the page makes (and two it never makes, for comparison) over
// repeats and prints the medians; false when a request does not answer 200.
bool time_requests(int port, int trials) {
  const std::vector<std::string> page = {
      "/", "/static/style.css", "/static/chart.min.js", "/static/app.js", "/api/v1/campaigns",
      "/api/v1/series/presets", "/api/v1/campaigns/newest/series",
      "/api/v1/campaigns/newest/presets",
      "/api/v1/campaigns/newest/trials?offset=0&limit=50&disposition=&q=",
      // Never loaded by the page, for comparison: the unsampled series, the whole list.
      "/api/v1/campaigns/1/series?max_points=0", "/api/v1/campaigns/1/trials"};
  constexpr int kRepeats = 15;
  std::printf("%-66s %10s %12s\n", "request", "median ms", "bytes");
  constexpr std::size_t kFirstView = 9;  // the page's own requests; the rest are for comparison
  double total = 0;
  for (std::size_t u = 0; u < page.size(); ++u) {
    const std::string& url = page[u];
    std::vector<double> ms;
    std::size_t bytes = 0;
    for (int i = 0; i < kRepeats; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto reply = sg::bench::http_get(port, url);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      if (reply.status != 200) {
        std::fprintf(stderr, "%s: HTTP %d\n", url.c_str(), reply.status);
        return false;
      }
      bytes = reply.body.size();
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%-66s %10.2f %12zu\n", url.c_str(), ms[ms.size() / 2], bytes);
    if (u < kFirstView) total += ms[ms.size() / 2];
  }
  std::printf(
      "%-66s %10.2f   (%d trials; the first view's %zu requests, sequential: the page sends "
      "the API calls in parallel)\n",
      "sum of medians", total, trials, kFirstView);
  return true;
}

// Headless Chromium loads of the page and their ready times; false when a load never
// reported ready.
bool time_chromium_loads(int port) {
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/";
  // Cold: a new browser profile per load (no cached Chart.js). Warm: one profile, as a
  // person reloading the page; the embedded static files may be cached (and Chart.js's
  // compiled code with them: each warm load's browser runs on for a second after "ready"
  // so it writes them, as a browser that stays open does), data never is. Unsettled:
  // cold, navigating while the browser is still starting (how this bench measured
  // before; for comparison).
  constexpr int kSettleMs = 2500;
  constexpr int kLingerMs = 1000;  // warm profile only: let the browser write its caches
  std::vector<Load> cold, warm, unsettled;
  const std::string stem = "/tmp/sg-bench-" + std::to_string(::getpid());
  for (int i = 0; i < 7; ++i) {
    cold.push_back(chromium_load(url, stem + "-cold-" + std::to_string(i), kSettleMs));
    warm.push_back(chromium_load(url, stem + "-warm", kSettleMs, kLingerMs));
    unsettled.push_back(chromium_load(url, stem + "-unsettled-" + std::to_string(i), 0));
  }
  warm.erase(warm.begin());  // the first load with that profile is a cold one
  for (const auto* v : {&cold, &warm, &unsettled}) {
    for (const auto& load : *v) {
      if (load.ms < 0) {
        std::fprintf(stderr, "chromium: the dashboard did not report ready\n");
        return false;
      }
    }
  }
  std::printf(
      "chromium: dashboard ready (navigation start -> frame with every chart and the first table "
      "page):\n"
      "  cold profile:  %s\n  warm profile:  %s\n  cold, browser still starting: %s\n",
      summary(cold).c_str(), summary(warm).c_str(), summary(unsettled).c_str());
  std::system(("rm -rf " + stem + "-*").c_str());
  return true;
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
  if (!time_requests(server.port(), trials)) return 1;
  if (std::system("command -v chromium >/dev/null 2>&1") != 0) return 0;
  return time_chromium_loads(server.port()) ? 0 : 1;
}
