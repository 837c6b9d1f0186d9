#include "agent/gate/gate.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "agent/common/units.hpp"

namespace sg::agent {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

namespace {
double mean_grad_norm(const TrialResult& r) {
  double s = 0;
  for (const auto& x : r.step_records) s += x.grad_norm;
  return r.step_records.empty() ? 0 : s / static_cast<double>(r.step_records.size());
}
}  // namespace

Deviation deviation(const TrialResult& run, const TrialResult& ref) {
  Deviation d;
  std::size_t n = std::min(run.step_records.size(), ref.step_records.size());
  double sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double e = run.step_records[i].loss - ref.step_records[i].loss;
    sq += e * e;
  }
  d.curve_rms = n ? std::sqrt(sq / static_cast<double>(n)) : 0;
  if (run.step_records.size() != ref.step_records.size()) d.curve_rms = INFINITY;
  d.eval_loss_abs = run.has_eval && ref.has_eval ? std::fabs(run.eval_loss - ref.eval_loss) : 0.0;
  if (run.has_eval != ref.has_eval) d.eval_loss_abs = INFINITY;
  double g = mean_grad_norm(run), g0 = mean_grad_norm(ref);
  d.grad_norm_log = (g > 0 && g0 > 0) ? std::fabs(std::log(g / g0)) : INFINITY;
  // Non-finite values anywhere are never "inside" a band.
  if (!std::isfinite(d.curve_rms)) d.curve_rms = INFINITY;
  if (!std::isfinite(d.eval_loss_abs)) d.eval_loss_abs = INFINITY;
  if (!std::isfinite(d.grad_norm_log)) d.grad_norm_log = INFINITY;
  return d;
}

Band compute_band(const TrialResult& s0, const std::vector<TrialResult>& other_seeds) {
  Band b;
  b.seeds = 1 + static_cast<int>(other_seeds.size());
  for (const auto& r : other_seeds) {
    Deviation d = deviation(r, s0);
    b.max.curve_rms = std::max(b.max.curve_rms, d.curve_rms);
    b.max.eval_loss_abs = std::max(b.max.eval_loss_abs, d.eval_loss_abs);
    b.max.grad_norm_log = std::max(b.max.grad_norm_log, d.grad_norm_log);
  }
  return b;
}

Verdict bitwise_equal(const TrialResult& a, const TrialResult& b) {
  if (a.step_records.size() != b.step_records.size()) {
    return {false, fmt::format("step count differs ({} vs {})", a.step_records.size(), b.step_records.size())};
  }
  for (std::size_t i = 0; i < a.step_records.size(); ++i) {
    const auto &x = a.step_records[i], &y = b.step_records[i];
    if (x.loss_bits != y.loss_bits) {
      return {false, fmt::format("step {} loss bits differ ({:08x} vs {:08x})", i, x.loss_bits, y.loss_bits)};
    }
    if (x.grad_norm_bits != y.grad_norm_bits) {
      return {false, fmt::format("step {} grad-norm bits differ ({:08x} vs {:08x})", i, x.grad_norm_bits, y.grad_norm_bits)};
    }
  }
  if (a.has_eval != b.has_eval || a.eval_loss_bits != b.eval_loss_bits) return {false, "eval loss bits differ"};
  if (a.param_digest != b.param_digest) return {false, "parameter digest differs"};
  if (a.optimizer_digest != b.optimizer_digest) return {false, "optimizer digest differs"};
  return {true, "bitwise identical"};
}

Verdict within_band(const TrialResult& candidate, const TrialResult& s0, const Band& band, double factor) {
  Deviation d = deviation(candidate, s0);
  double loss_scale = std::max(std::fabs(s0.has_eval || s0.step_records.empty() ? s0.eval_loss : s0.step_records.back().loss), 1e-30);
  auto limit = [&](double band_value, double scale) {
    return std::max(band_value * factor, kBandRelativeFloor * scale);
  };
  double rms_limit = limit(band.max.curve_rms, loss_scale);
  double eval_limit = limit(band.max.eval_loss_abs, loss_scale);
  double gn_limit = limit(band.max.grad_norm_log, 1.0);
  if (!(d.curve_rms <= rms_limit)) {
    return {false, fmt::format("loss-curve RMS deviation {:.3g} outside band {:.3g} (x{} of seed spread)", d.curve_rms, rms_limit, factor)};
  }
  if (!(d.eval_loss_abs <= eval_limit)) {
    return {false, fmt::format("final eval-loss deviation {:.3g} outside band {:.3g}", d.eval_loss_abs, eval_limit)};
  }
  if (!(d.grad_norm_log <= gn_limit)) {
    return {false, fmt::format("grad-norm ratio {:.3f}x outside band {:.3f}x", std::exp(d.grad_norm_log), std::exp(gn_limit))};
  }
  return {true, fmt::format("inside the {}-seed band (rms {:.3g} <= {:.3g})", band.seeds, d.curve_rms, rms_limit)};
}

SpeedVerdict judge_speed(const std::vector<double>& baseline, const std::vector<double>& candidate,
                         double noise_threshold) {
  SpeedVerdict v;
  std::size_t n = std::min(baseline.size(), candidate.size());
  std::vector<double> ratios;
  for (std::size_t i = 0; i < n; ++i) {
    if (baseline[i] > 0) ratios.push_back(candidate[i] / baseline[i]);
  }
  if (ratios.empty()) {
    v.reason = "no paired measurements";
    return v;
  }
  v.baseline_median = median(std::vector<double>(baseline.begin(), baseline.begin() + n));
  v.candidate_median = median(std::vector<double>(candidate.begin(), candidate.begin() + n));
  v.speedup = median(ratios);
  auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
  v.spread = (*hi - *lo) / 2;
  v.faster = v.speedup > 1.0 + noise_threshold;
  v.reason = fmt::format("speedup {:.3f}x ± {:.3f} over {} pairs ({} noise threshold {:.0f} %)", v.speedup,
                         v.spread, ratios.size(), v.faster ? "above" : "not above", noise_threshold * 100);
  return v;
}

Verdict memory_fits(double projected_bytes, double budget_bytes) {
  bool ok = projected_bytes <= budget_bytes;
  return {ok, fmt::format("projected peak {} {} budget {}", format_gib(projected_bytes), ok ? "<=" : ">",
                          format_gib(budget_bytes))};
}

}  // namespace sg::agent
