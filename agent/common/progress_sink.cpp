#include "agent/common/progress_sink.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include <spdlog/spdlog.h>

namespace sg::agent {
namespace {

std::shared_ptr<ProgressSink>& installed() {
  static std::shared_ptr<ProgressSink> sink;
  return sink;
}

const char* level_color(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return "\033[36m";
    case spdlog::level::info:
      return "\033[32m";
    case spdlog::level::warn:
      return "\033[33m\033[1m";
    case spdlog::level::err:
      return "\033[31m\033[1m";
    case spdlog::level::critical:
      return "\033[1m\033[41m";
    default:
      return "";
  }
}

}  // namespace

ProgressSink::ProgressSink(std::FILE* out, bool terminal, bool color)
    : out_(out), terminal_(terminal), color_(color) {}

void ProgressSink::set_status(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  status_ = line;
  if (!terminal_) return;
  clear_line();
  draw_line();
  std::fflush(out_);
}

std::string ProgressSink::status() {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

void ProgressSink::sink_it_(const spdlog::details::log_msg& msg) {
  spdlog::memory_buf_t buf;
  formatter_->format(msg, buf);
  clear_line();
  const std::size_t start = msg.color_range_start, end = msg.color_range_end;
  if (color_ && end > start && end <= buf.size()) {
    std::fwrite(buf.data(), 1, start, out_);
    std::fputs(level_color(msg.level), out_);
    std::fwrite(buf.data() + start, 1, end - start, out_);
    std::fputs("\033[0m", out_);
    std::fwrite(buf.data() + end, 1, buf.size() - end, out_);
  } else {
    std::fwrite(buf.data(), 1, buf.size(), out_);
  }
  draw_line();
  std::fflush(out_);
}

void ProgressSink::flush_() { std::fflush(out_); }

void ProgressSink::clear_line() {
  if (drawn_) std::fputs("\r\033[K", out_);
  drawn_ = false;
}

void ProgressSink::draw_line() {
  if (!terminal_ || status_.empty()) return;
  std::fputs(status_.c_str(), out_);
  drawn_ = true;
}

std::string short_duration(double s) {
  const long t = std::lround(std::max(0.0, s));
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}h{:02}m", t / 3600, (t % 3600) / 60);
}

std::string progress_line(int trials_run, int budget_trials, double budget_minutes,
                          double best_speedup, double elapsed_s, const std::string& what) {
  std::string eta = "?";
  if (budget_trials > 0 && trials_run > 0) {
    eta = short_duration(elapsed_s / trials_run * std::max(0, budget_trials - trials_run));
  } else if (budget_minutes > 0) {
    eta = "≤ " + short_duration(budget_minutes * 60 - elapsed_s) + " (budget)";
  }
  std::string line = fmt::format(
      "trial {}{}  best {:.3f}x  ETA {}  ", trials_run,
      budget_trials > 0 ? "/" + std::to_string(budget_trials) : std::string(), best_speedup, eta);
  constexpr std::size_t kWidth = 100;
  if (line.size() < kWidth) line += what.substr(0, kWidth - line.size());
  return line;
}

bool no_color_requested() {
  const char* v = std::getenv("NO_COLOR");
  return v != nullptr && *v != '\0';
}

std::shared_ptr<ProgressSink> progress_sink() { return installed(); }

void install_progress_logger(const std::string& name) {
  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  auto sink = std::make_shared<ProgressSink>(stderr, terminal, terminal && !no_color_requested());
  installed() = sink;
  auto logger = std::make_shared<spdlog::logger>(name, sink);
  spdlog::set_default_logger(logger);
}

void set_progress_status(const std::string& line) {
  if (auto s = installed()) s->set_status(line);
}

}  // namespace sg::agent
