#include "agent/gate/speed_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace sg::agent {

namespace {

// Regularised incomplete beta I_x(a, b) by Lentz's continued fraction (converges for
// x < (a + 1) / (a + b + 2); the symmetry relation covers the rest).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
    d = 1.0 + aa * d;
    c = 1.0 + aa / c;
    if (std::fabs(d) < kTiny) d = kTiny;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
    d = 1.0 + aa * d;
    c = 1.0 + aa / c;
    if (std::fabs(d) < kTiny) d = kTiny;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-15) break;
  }
  return h;
}

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_continued_fraction(a, b, x) / a;
  return 1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b;
}

double student_t_cdf(double t, int df) {
  const double v = df;
  const double tail = 0.5 * incomplete_beta(v / 2.0, 0.5, v / (v + t * t));
  return t >= 0 ? 1.0 - tail : tail;
}

}  // namespace

double student_t_quantile(double p, int df) {
  if (df < 1 || !(p > 0 && p < 1)) return std::nan("");
  if (p == 0.5) return 0;
  if (p < 0.5) return -student_t_quantile(1.0 - p, df);
  double lo = 0, hi = 1;
  while (student_t_cdf(hi, df) < p) hi *= 2;  // the CDF is monotone: bracket, then bisect
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

std::string speed_text(double speedup, double lo, double hi, int pairs, double spread) {
  if (std::isnan(speedup)) return "not paired";
  if (std::isnan(lo) || std::isnan(hi) || pairs <= 0) {
    if (std::isfinite(spread) && spread >= 0)
      return fmt::format("{:.3f}x ± {:.3f} (half-range, no interval)", speedup, spread);
    return fmt::format("{:.3f}x (no interval)", speedup);
  }
  const auto bound = [](double x) {
    return std::isfinite(x) ? fmt::format("{:.3f}", x) : std::string("inf");
  };
  return fmt::format("{:.3f}x [{}, {}] 95 %, {} pair{}", speedup, bound(lo), bound(hi), pairs,
                     pairs == 1 ? "" : "s");
}

std::string SpeedInterval::text() const { return speed_text(speedup, lo, hi, pairs); }

SpeedInterval judge_pairs(const std::vector<SpeedPair>& pairs, const SpeedRule& rule) {
  SpeedInterval v;
  std::vector<double> d;
  for (const auto& p : pairs) {
    if (p.base_step_s > 0 && p.cand_step_s > 0)
      d.push_back(std::log(p.base_step_s / p.cand_step_s));
  }
  v.pairs = static_cast<int>(d.size());
  if (d.empty()) {
    v.lo = 0, v.hi = std::numeric_limits<double>::infinity();
    return v;
  }
  double mean = 0;
  for (double x : d) mean += x;
  mean /= static_cast<double>(d.size());
  v.speedup = std::exp(mean);
  if (d.size() < 2) {
    v.lo = 0, v.hi = std::numeric_limits<double>::infinity();
    return v;
  }
  double ss = 0;
  for (double x : d) ss += (x - mean) * (x - mean);
  v.sd_log = std::sqrt(ss / static_cast<double>(d.size() - 1));
  const double t = student_t_quantile(1.0 - rule.alpha_per_look(), v.pairs - 1);
  const double half = t * v.sd_log / std::sqrt(static_cast<double>(v.pairs));
  v.lo = std::exp(mean - half);
  v.hi = std::exp(mean + half);
  const double threshold = 1.0 + rule.min_effect;
  if (v.pairs >= rule.min_pairs && v.lo >= threshold)
    v.call = SpeedCall::faster;
  else if (v.pairs >= rule.min_pairs && v.hi < threshold)
    v.call = SpeedCall::not_faster;
  return v;
}

bool speed_settled(const SpeedInterval& v, const SpeedRule& rule) {
  return v.call != SpeedCall::undecided || v.pairs >= rule.max_pairs;
}

std::vector<int> SpeedRule::look_points() const {
  // A single pair has no spread, so no look before the second (unless the cap is one pair).
  const int first = std::max(1, std::min(std::max(2, min_pairs), max_pairs));
  std::vector<int> points{first};
  while (points.back() < max_pairs) {
    const int next = static_cast<int>(std::ceil(points.back() * kLookGrowth));
    points.push_back(std::min(std::max(next, points.back() + 1), max_pairs));
  }
  return points;
}

bool SpeedRule::is_look(int pairs) const {
  const auto points = look_points();
  return std::find(points.begin(), points.end(), pairs) != points.end();
}

bool speed_stops(const std::vector<SpeedPair>& so_far, const SpeedRule& rule, SpeedInterval* out) {
  const int n = static_cast<int>(so_far.size());
  if (n < rule.max_pairs && !rule.is_look(n)) return false;
  *out = judge_pairs(so_far, rule);
  return speed_settled(*out, rule);
}

SpeedInterval replay_speed(const std::vector<SpeedPair>& recorded, const SpeedRule& rule) {
  std::vector<SpeedPair> so_far;
  SpeedInterval v;
  for (const auto& p : recorded) {
    so_far.push_back(p);
    if (speed_stops(so_far, rule, &v)) return v;
  }
  return judge_pairs(so_far, rule);
}

double steady_step_seconds(const std::vector<StepRecord>& steps) {
  const std::size_t n = steps.size();
  const std::size_t warm = n >= 2 ? std::max<std::size_t>(1, n / 4) : 0;
  std::vector<double> s;
  for (std::size_t i = warm; i < n; ++i) {
    if (steps[i].seconds > 0 && std::isfinite(steps[i].seconds)) s.push_back(steps[i].seconds);
  }
  if (s.empty()) return 0;
  std::sort(s.begin(), s.end());
  const std::size_t m = s.size();
  return m % 2 ? s[m / 2] : 0.5 * (s[m / 2 - 1] + s[m / 2]);
}

std::string HostNoise::text() const {
  return fmt::format(
      "A/A noise {:.2f} % per pair over {} pairs; smallest detectable speedup {:.3f}x "
      "(resolution {:.1f} %)",
      100.0 * sd_log, pairs, detectable_speedup, 100.0 * resolution);
}

HostNoise measure_noise(const std::vector<SpeedPair>& aa_pairs, const SpeedRule& rule) {
  HostNoise h;
  const SpeedInterval v = judge_pairs(aa_pairs, rule);
  h.pairs = v.pairs;
  h.sd_log = v.sd_log;
  h.mean_log = v.speedup > 0 ? std::log(v.speedup) : 0;
  const int n = std::max(2, rule.max_pairs);
  const double t_alpha = student_t_quantile(1.0 - rule.alpha_per_look(), n - 1);
  const double t_power = student_t_quantile(kDetectionPower, n - 1);
  const double shift = (t_alpha + t_power) * h.sd_log / std::sqrt(static_cast<double>(n));
  h.resolution = std::expm1(shift);
  h.detectable_speedup = (1.0 + rule.min_effect) * std::exp(shift);
  return h;
}

}  // namespace sg::agent
