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
    return {false, fmt::format("step count differs ({} vs {})", a.step_records.size(),
                               b.step_records.size())};
  }
  for (std::size_t i = 0; i < a.step_records.size(); ++i) {
    const auto &x = a.step_records[i], &y = b.step_records[i];
    if (x.loss_bits != y.loss_bits) {
      return {false, fmt::format("step {} loss bits differ ({:08x} vs {:08x})", i, x.loss_bits,
                                 y.loss_bits)};
    }
    if (x.grad_norm_bits != y.grad_norm_bits) {
      return {false, fmt::format("step {} grad-norm bits differ ({:08x} vs {:08x})", i,
                                 x.grad_norm_bits, y.grad_norm_bits)};
    }
  }
  if (a.has_eval != b.has_eval || a.eval_loss_bits != b.eval_loss_bits)
    return {false, "eval loss bits differ"};
  if (a.param_digest != b.param_digest) return {false, "parameter digest differs"};
  if (a.optimizer_digest != b.optimizer_digest) return {false, "optimizer digest differs"};
  return {true, "bitwise identical"};
}

Band compute_rounding_band(
    const std::vector<std::pair<TrialResult, TrialResult>>& perturbed_vs_plain) {
  Band b;
  b.seeds = static_cast<int>(perturbed_vs_plain.size());
  for (const auto& [perturbed, plain] : perturbed_vs_plain) {
    Deviation d = deviation(perturbed, plain);
    b.max.curve_rms = std::max(b.max.curve_rms, d.curve_rms);
    b.max.eval_loss_abs = std::max(b.max.eval_loss_abs, d.eval_loss_abs);
    b.max.grad_norm_log = std::max(b.max.grad_norm_log, d.grad_norm_log);
  }
  return b;
}

Problem band_problem(const Band& band, const std::string& what) {
  const Deviation& m = band.max;
  if (!std::isfinite(m.curve_rms) || !std::isfinite(m.eval_loss_abs) ||
      !std::isfinite(m.grad_norm_log)) {
    return fmt::format(
        "the {} is not finite (loss-curve RMS {}, eval {}, grad-norm log-ratio {}): a run "
        "in it reported non-finite values or a different step count",
        what, m.curve_rms, m.eval_loss_abs, m.grad_norm_log);
  }
  if (m.curve_rms == 0 && m.grad_norm_log == 0) {
    return fmt::format(
        "the {} is zero: its runs trained bit for bit alike, so the trainer ignores what "
        "should move training (the seed, or --perturb)",
        what);
  }
  return std::nullopt;
}

namespace {

struct Limits {
  double rms = 0, eval = 0, grad_norm_log = 0;
};

Limits limits_of(const Band& band, double factor, double loss_scale) {
  auto limit = [&](double band_value, double scale) {
    return std::max(band_value * factor, kBandRelativeFloor * scale);
  };
  return {limit(band.max.curve_rms, loss_scale), limit(band.max.eval_loss_abs, loss_scale),
          limit(band.max.grad_norm_log, 1.0)};
}

// The first metric of `d` outside `lim`, named; nullopt when all are inside.
Problem outside(const Deviation& d, const Limits& lim, const std::string& band_name) {
  if (!(d.curve_rms <= lim.rms)) {
    return fmt::format("loss-curve RMS deviation {:.3g} outside {} {:.3g}", d.curve_rms, band_name,
                       lim.rms);
  }
  if (!(d.eval_loss_abs <= lim.eval)) {
    return fmt::format("final eval-loss deviation {:.3g} outside {} {:.3g}", d.eval_loss_abs,
                       band_name, lim.eval);
  }
  if (!(d.grad_norm_log <= lim.grad_norm_log)) {
    return fmt::format("grad-norm ratio {:.4f}x outside {} {:.4f}x", std::exp(d.grad_norm_log),
                       band_name, std::exp(lim.grad_norm_log));
  }
  return std::nullopt;
}

}  // namespace

Verdict within_tolerance(const TrialResult& candidate, const TrialResult& s0,
                         const ToleranceBands& bands) {
  Deviation d = deviation(candidate, s0);
  const double loss_scale =
      std::max(std::fabs(s0.has_eval || s0.step_records.empty() ? s0.eval_loss
                                                                : s0.step_records.back().loss),
               1e-30);
  const Limits seed = limits_of(bands.seed, bands.seed_factor, loss_scale);
  const std::string seed_name =
      fmt::format("{}x the {}-seed band", bands.seed_factor, bands.seed.seeds);
  if (!bands.rounding) {
    if (Problem why = outside(d, seed, seed_name)) return {false, *why};
    return {true,
            fmt::format(
                "inside {} (rms {:.3g} <= {:.3g}); tolerance at seed-band sensitivity: the trainer "
                "has no --perturb, so changes smaller than seed-to-seed variation pass",
                seed_name, d.curve_rms, seed.rms)};
  }
  const Limits round = limits_of(*bands.rounding, bands.rounding_factor, loss_scale);
  const std::string round_name = fmt::format("{}x the rounding band", bands.rounding_factor);
  if (Problem why = outside(d, round, round_name)) return {false, *why};
  if (Problem why = outside(d, seed, seed_name)) return {false, *why};
  return {
      true,
      fmt::format(
          "inside {} (rms {:.3g} <= {:.3g}; sensitivity: a change moving the loss curve by more "
          "than {:.3g} RMS fails, {:.0f}x finer than the seed band)",
          round_name, d.curve_rms, round.rms, round.rms, seed.rms / std::max(round.rms, 1e-300))};
}

Verdict within_band(const TrialResult& candidate, const TrialResult& s0, const Band& band,
                    double factor) {
  ToleranceBands b;
  b.seed = band;
  b.seed_factor = factor;
  return within_tolerance(candidate, s0, b);
}

Verdict memory_fits(double projected_bytes, double budget_bytes) {
  bool ok = projected_bytes <= budget_bytes;
  return {ok, fmt::format("projected peak {} {} budget {}", format_gib(projected_bytes),
                          ok ? "<=" : ">", format_gib(budget_bytes))};
}

}  // namespace sg::agent
