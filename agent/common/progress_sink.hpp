// stderr for speedgate's log and its progress line together: one spdlog sink that
// owns the terminal's last line. A log record clears the status line, prints itself,
// then redraws the status below it, under one mutex, so the two never interleave.
// Without a terminal on stderr there is no status line (log lines only); colour only
// on a terminal and never when NO_COLOR is set (https://no-color.org).
#pragma once
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include <spdlog/sinks/base_sink.h>

namespace sg::agent {

class ProgressSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  // `out` is normally stderr; `terminal` says whether it is a tty; `color` whether
  // level names may be coloured (terminal and no NO_COLOR).
  ProgressSink(std::FILE* out, bool terminal, bool color);

  // Replaces the status line (no-op without a terminal). Empty clears it.
  void set_status(const std::string& line);
  // The status line as last set (for tests).
  std::string status();

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override;

 private:
  void clear_line();
  void draw_line();

  std::FILE* out_;
  bool terminal_, color_;
  std::string status_;
  bool drawn_ = false;
};

// The sink behind the default logger, created by install_progress_logger(); null
// before. Callers use set_progress_status().
std::shared_ptr<ProgressSink> progress_sink();

// Makes a logger named `name` writing to stderr through a ProgressSink the default
// spdlog logger. Terminal and colour are detected (isatty, NO_COLOR).
void install_progress_logger(const std::string& name);

// Sets the status line of the installed sink; does nothing when none is installed.
void set_progress_status(const std::string& line);

// The campaign's status line: "trial 15/40  best 1.107x  ETA 1m20s  accepted TEXT_CACHE=1".
// The ETA is the mean wall time per trainer run so far times the runs left when the
// budget is in runs; with a time budget it is "<= the budget left" (the plan may end
// sooner); "?" with neither or before the first run. `what` is cut to fit 100 columns.
std::string progress_line(int trials_run, int budget_trials, double budget_minutes,
                          double best_speedup, double elapsed_s, const std::string& what);

// "45s", "3m05s", "1h02m"
std::string short_duration(double seconds);

// True when NO_COLOR is set to a non-empty value.
bool no_color_requested();

}  // namespace sg::agent
