// CampaignEvaluator's baselines per step budget (docs/controller.md, "The gate"): the
// preflight (defaults twice at s0: bitwise equal, or every switch gated by tolerance), the
// seed band (the outer bound of tolerance), the rounding band (the baseline with its
// initial parameters perturbed by --perturb-eps at s0 and the first band seed: how far
// training moves when only rounding moves, the judge of tolerance) and the host's noise
// (A/A pairs of the baseline, where speed pairs run). A band that is not finite, or zero
// where seeds or perturbations must move training, stops the campaign.
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "agent/campaign/campaign_evaluator.hpp"
#include "agent/common/errors.hpp"

namespace sg::agent {

namespace {

void require_usable(const Band& band, const std::string& what) {
  if (Problem why = band_problem(band, what)) throw GateFailure(*why);
}

}  // namespace

const CampaignEvaluator::Baseline& CampaignEvaluator::baseline(int steps, bool with_noise) {
  if (auto it = baselines_.find(steps); it != baselines_.end()) {
    if (with_noise && opt_.speed.noise_pairs > 0 && !noise_measured_.count(steps))
      measure_noise_at(steps);
    return it->second;
  }
  const int s0 = opt_.trial.seeds.front();
  Baseline b;
  {
    std::vector<Plan> independent = {{"baseline", {}, s0, steps, micro_batch_, 0, ""}};
    if (!deterministic_) independent.push_back({"baseline", {}, s0, steps, micro_batch_, 1, ""});
    for (std::size_t i = 1; i < opt_.trial.seeds.size(); ++i)
      independent.push_back({"band", {}, opt_.trial.seeds[i], steps, micro_batch_, 0, ""});
    trials_.run_batch(independent);
  }
  Run a = run("baseline", {}, s0, steps, micro_batch_, 0);
  if (!a.result)
    throw GateFailure(fmt::format("baseline (all defaults, seed {}) failed: {}: {}", s0,
                                  to_string(*a.failure), a.reason));
  store_.add_baseline(campaign_id_, steps, "preflight_a", s0, a.trial_id);
  b.trial_ids.push_back(a.trial_id);
  std::optional<TrialResult> preflight_b;
  if (!deterministic_) {
    Run a2 = run("baseline", {}, s0, steps, micro_batch_, 1);
    if (!a2.result)
      throw GateFailure(
          fmt::format("baseline repeat failed: {}: {}", to_string(*a2.failure), a2.reason));
    store_.add_baseline(campaign_id_, steps, "preflight_b", s0, a2.trial_id);
    b.trial_ids.push_back(a2.trial_id);
    Verdict v = bitwise_equal(*a.result, *a2.result);
    deterministic_ = v.pass;
    std::string note =
        v.pass
            ? "preflight: baseline twice at seed " + std::to_string(s0) + " is bitwise equal"
            : "NON-DETERMINISTIC environment (" + v.reason + "): every switch gated by tolerance";
    if (!v.pass) spdlog::error("{}", note);
    store_.set_campaign_determinism(campaign_id_, v.pass, note);
    if (a.result->fingerprint.is_object()) {
      store_.set_campaign_environment(
          campaign_id_, store_.upsert_environment(fingerprint_hash(a.result->fingerprint),
                                                  a.result->fingerprint));
    }
    if (!v.pass) preflight_b = std::move(a2.result);
  }
  std::vector<TrialResult> others;
  for (std::size_t i = 1; i < opt_.trial.seeds.size(); ++i) {
    Run r = run("band", {}, opt_.trial.seeds[i], steps, micro_batch_, 0);
    if (!r.result)
      throw GateFailure(fmt::format("baseline band seed {} failed: {}: {}", opt_.trial.seeds[i],
                                    to_string(*r.failure), r.reason));
    store_.add_baseline(campaign_id_, steps, "band", opt_.trial.seeds[i], r.trial_id);
    b.trial_ids.push_back(r.trial_id);
    others.push_back(std::move(*r.result));
  }
  b.s0 = std::move(*a.result);
  b.bands.seed = compute_band(b.s0, others);
  b.bands.seed_factor = opt_.gate.band_factor;
  b.bands.rounding_factor = opt_.gate.rounding_factor;
  if (!others.empty()) require_usable(b.bands.seed, fmt::format("seed band at {} steps", steps));
  b.bands.rounding =
      rounding_band(steps, b.s0, others, preflight_b ? &*preflight_b : nullptr, b.trial_ids);
  trials_.set_disposition(b.trial_ids, Disposition::accepted);
  const Baseline& stored_base = baselines_.emplace(steps, std::move(b)).first->second;
  if (with_noise && opt_.speed.noise_pairs > 0) measure_noise_at(steps);
  return stored_base;
}

std::optional<Band> CampaignEvaluator::rounding_band(int steps, const TrialResult& s0,
                                                     const std::vector<TrialResult>& band_runs,
                                                     const TrialResult* preflight_b,
                                                     std::vector<std::int64_t>& ids) {
  if (opt_.gate.perturb_eps <= 0 || !manifest_.can("perturb")) {
    if (!seed_band_warned_) {
      spdlog::warn("tolerance switches are judged at seed-band sensitivity: {}",
                   opt_.gate.perturb_eps <= 0
                       ? "--perturb-eps 0"
                       : "the trainer's manifest lists no capability \"perturb\"");
      seed_band_warned_ = true;
    }
    return std::nullopt;
  }
  // The perturbed runs at s0 and at the first band seed, each against its plain run.
  std::vector<Plan> plans = {{"rounding",
                              {},
                              opt_.trial.seeds.front(),
                              steps,
                              micro_batch_,
                              0,
                              "",
                              {},
                              opt_.gate.perturb_eps}};
  if (opt_.trial.seeds.size() > 1)
    plans.push_back({"rounding",
                     {},
                     opt_.trial.seeds[1],
                     steps,
                     micro_batch_,
                     0,
                     "",
                     {},
                     opt_.gate.perturb_eps});
  trials_.run_batch(plans);
  std::vector<std::pair<TrialResult, TrialResult>> pairs;
  std::vector<std::int64_t> band_ids;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    Run r = run("rounding", {}, plans[i].seed, steps, micro_batch_, 0, "", opt_.gate.perturb_eps);
    if (!r.result) {
      throw GateFailure(fmt::format("rounding-band run (--perturb {}, seed {}) failed: {}: {}",
                                    opt_.gate.perturb_eps, plans[i].seed, to_string(*r.failure),
                                    r.reason));
    }
    ids.push_back(r.trial_id);
    band_ids.push_back(r.trial_id);
    pairs.emplace_back(std::move(*r.result), i == 0 ? s0 : band_runs.front());
  }
  // A non-deterministic environment moves training between identical runs too: the band
  // is at least that.
  if (preflight_b) pairs.emplace_back(*preflight_b, s0);
  Band band = compute_rounding_band(pairs);
  require_usable(band, fmt::format("rounding band at {} steps", steps));
  RoundingBandRow row;
  row.campaign_id = campaign_id_;
  row.steps = steps;
  row.perturb_eps = opt_.gate.perturb_eps;
  row.seeds = band.seeds;
  row.curve_rms = band.max.curve_rms;
  row.eval_loss_abs = band.max.eval_loss_abs;
  row.grad_norm_log = band.max.grad_norm_log;
  row.seed_curve_rms = compute_band(s0, band_runs).max.curve_rms;
  row.trial_ids = band_ids;
  store_.set_rounding_band(row);
  spdlog::info(
      "rounding band at {} steps (--perturb {:.3g}, {} seed(s)): loss-curve RMS {:.3g}, grad-norm "
      "log-ratio {:.3g}; tolerance switches must stay within {}x",
      steps, opt_.gate.perturb_eps, band.seeds, band.max.curve_rms, band.max.grad_norm_log,
      opt_.gate.rounding_factor);
  return band;
}

void CampaignEvaluator::measure_noise_at(int steps) {
  noise_measured_.insert(steps);
  const SpeedRule rule = speed_rule(opt_);
  std::vector<SpeedPair> pairs;
  std::vector<SpeedPairRow> rows;
  for (int r = 0; r < opt_.speed.noise_pairs; ++r) {
    Run a = run("noise_a", {}, opt_.trial.seeds.front(), steps, micro_batch_, r);
    Run b = run("noise_b", {}, opt_.trial.seeds.front(), steps, micro_batch_, r);
    if (!a.result || !b.result) {
      const Run& bad = !a.result ? a : b;
      spdlog::warn("A/A noise pair {} at {} steps failed ({}: {}): host noise not measured", r,
                   steps, to_string(*bad.failure), bad.reason);
      return;
    }
    const std::optional<PairOfRuns> p = pair_of(a, b, "", steps, r);
    if (!p) {
      spdlog::warn("A/A noise pair {} at {} steps has no step times: host noise not measured", r,
                   steps);
      return;
    }
    pairs.push_back(p->pair);
    rows.push_back(p->row);
  }
  const HostNoise noise = measure_noise(pairs, rule);
  store_.add_noise_pairs(campaign_id_, steps, rows);
  HostNoiseRow row;
  row.campaign_id = campaign_id_;
  row.steps = steps;
  row.micro_batch = micro_batch_;
  row.pairs = noise.pairs;
  row.sd_log_ratio = noise.sd_log;
  row.mean_log_ratio = noise.mean_log;
  row.detectable_speedup = noise.detectable_speedup;
  row.resolution = noise.resolution;
  row.min_effect = opt_.speed.min_effect;
  row.max_repeats = opt_.speed.max_repeats;
  store_.set_host_noise(row);
  spdlog::info("host noise at {} steps: {}; at most {} pairs a verdict", steps, noise.text(),
               opt_.speed.max_repeats);
  if (noise.resolution > opt_.speed.min_effect) {
    spdlog::warn(
        "--min-effect {:.1f} % is below what this host resolves at {} pairs ({:.1f} %): expect "
        "'inconclusive' speed verdicts; raise --max-repeats or --min-effect, or quiet the host",
        100 * opt_.speed.min_effect, opt_.speed.max_repeats, 100 * noise.resolution);
  }
}

Verdict CampaignEvaluator::confirm_at_horizon(const Config& config, int steps) {
  const int horizon = steps * opt_.gate.horizon_factor;
  const Baseline& base = baseline(horizon, /*with_noise=*/false);
  Run r = run("horizon", config, opt_.trial.seeds.front(), horizon, micro_batch_, 0);
  if (!r.result) {
    return {false, fmt::format("at the {}-step horizon: {}: {}", horizon, to_string(*r.failure),
                               r.reason)};
  }
  Verdict v = within_tolerance(*r.result, base.s0, base.bands);
  v.reason = fmt::format("at the {}-step horizon: {}", horizon, v.reason);
  return v;
}

}  // namespace sg::agent
