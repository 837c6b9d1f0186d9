// agent/common/progress_sink: log lines and the status line never interleave on a
// terminal, nothing but log lines without one, colour only when allowed; the ETA
// comes from measured trial times or is bounded by the time budget.
#include "agent/common/progress_sink.hpp"

#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

namespace sg::agent {
namespace {

struct Captured {
  std::FILE* f = std::tmpfile();
  ~Captured() { std::fclose(f); }
  std::string text() {
    std::fflush(f);
    std::rewind(f);
    std::string s;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
    return s;
  }
};

// A ProgressSink writing to a temporary file, and a logger on it ("<level> <message>").
struct SinkOnFile {
  explicit SinkOnFile(bool terminal, bool color = false)
      : sink(std::make_shared<ProgressSink>(out.f, terminal, color)),
        log(std::make_shared<spdlog::logger>("progress-test", sink)) {
    log->set_pattern("%^%l%$ %v");
  }
  Captured out;
  std::shared_ptr<ProgressSink> sink;
  std::shared_ptr<spdlog::logger> log;
};

TEST(ProgressSink, LogLineClearsAndRedrawsTheStatusLine) {
  SinkOnFile t(/*terminal=*/true);
  t.sink->set_status("trial 1/4");
  t.log->info("[screen] accepted TEXT_CACHE=1");
  t.sink->set_status("trial 2/4");
  t.sink->set_status("");
  EXPECT_EQ(t.out.text(),
            "trial 1/4"
            "\r\033[Kinfo [screen] accepted TEXT_CACHE=1\ntrial 1/4"
            "\r\033[Ktrial 2/4"
            "\r\033[K");
}

TEST(ProgressSink, WithoutATerminalOnlyLogLines) {
  SinkOnFile t(/*terminal=*/false);
  t.sink->set_status("trial 1/4");
  t.log->warn("slow");
  EXPECT_EQ(t.out.text(), "warning slow\n");
  EXPECT_EQ(t.sink->status(), "trial 1/4");
}

TEST(ProgressSink, ColourOnlyWhenAllowed) {
  SinkOnFile plain(/*terminal=*/true, /*color=*/false), coloured(/*terminal=*/true, /*color=*/true);
  plain.log->error("x");
  coloured.log->error("x");
  EXPECT_EQ(plain.out.text().find('\033'), std::string::npos);
  EXPECT_NE(coloured.out.text().find("\033[31m"), std::string::npos);
}

TEST(ProgressSink, NoColorEnvironmentVariable) {
  ::setenv("NO_COLOR", "1", 1);
  EXPECT_TRUE(no_color_requested());
  ::setenv("NO_COLOR", "", 1);
  EXPECT_FALSE(no_color_requested());  // no-color.org: set and non-empty
  ::unsetenv("NO_COLOR");
  EXPECT_FALSE(no_color_requested());
}

TEST(ProgressLine, EtaFromMeasuredTrialTimes) {
  // 10 runs in 50 s: 5 s each, 30 left.
  EXPECT_EQ(progress_line(10, 40, 0, 1.107, 50.0, "accepted TEXT_CACHE=1"),
            "trial 10/40  best 1.107x  ETA 2m30s  accepted TEXT_CACHE=1");
  EXPECT_EQ(progress_line(0, 40, 0, 1.0, 0.0, "baseline"),
            "trial 0/40  best 1.000x  ETA ?  baseline");
}

TEST(ProgressLine, TimeBudgetIsAnUpperBound) {
  EXPECT_EQ(progress_line(3, 0, 10, 1.0, 130.0, "screen"),
            "trial 3  best 1.000x  ETA ≤ 7m50s (budget)  screen");
}

TEST(ProgressLine, CutToAHundredColumns) {
  EXPECT_EQ(progress_line(1, 2, 0, 1.0, 1.0, std::string(300, 'x')).size(), 100u);
}

}  // namespace
}  // namespace sg::agent
