// Memory projection: from measured peaks at >= 2 micro-batches on one device and
// the trainer's byte breakdown, project the peak at a target micro-batch, world
// size and ZeRO stage:
//   peak(b, W, z) = frozen + params*f_p(W,z) + grads*f_g(W,z) + optimizer*f_o(W,z)
//                   + comm_buffers(W) + other_fixed + per_sample*b + fragmentation
// where per_sample and the fixed intercept come from a least-squares line through
// the measured (b, peak) points, and other_fixed = intercept - (frozen + params +
// grads + optimizer) is the fixed part that is not model state (workspace).
//
// When every measured point carries the peak of each training phase (data, text, vae,
// forward, backward, clip, optimizer; protocol §3), each phase gets its own line and the
// one that is largest at the target is used: a step's peak is the maximum of phases that
// grow at different rates, and a line through the maxima extrapolates whichever phase
// happened to peak at the measured batch sizes.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/protocol/result.hpp"

namespace sg::agent {

// DDP all-reduce buckets held at once when W > 1 (two in flight, 25 MiB each).
constexpr double kCommBucketBytes = 25.0 * 1024 * 1024;
constexpr int kCommBucketsInFlight = 2;

struct PeakPoint {
  int micro_batch = 0;
  double peak_bytes = 0;  // max over ranks
  double reserved_bytes = 0;
  std::map<std::string, double> phases;  // peak allocated per phase; empty: not measured
};

struct LinearFit {
  double fixed = 0, per_sample = 0;
  double max_residual = 0;  // largest |measured - fitted| over the points
};

// REQUIRES: >= 2 points with at least two distinct micro-batches.
// Throws std::invalid_argument otherwise.
LinearFit fit_peak(const std::vector<PeakPoint>& points);

// The line to extrapolate to `target_micro_batch`: per phase when every point carries
// phases (the phases common to all of them), the one largest at the target; else the
// line through the overall peaks. `phase` is set to the chosen phase ("" = overall).
LinearFit fit_peak_at(const std::vector<PeakPoint>& points, int target_micro_batch,
                      std::string* phase);

struct ProjectionInputs {
  std::vector<PeakPoint> points;
  MemoryBreakdown breakdown;  // from one measured run (model state is batch-independent)
  double fragmentation = 0;   // measured reserved - allocated at the largest point (CUDA only)
  int target_micro_batch = 1, world_size = 1, zero_stage = 0;
};

struct Projection {
  double peak_bytes = 0;
  LinearFit fit;
  std::string phase;  // the phase whose line was extrapolated; "" = the overall peak
  double params = 0, grads = 0, optimizer = 0, frozen = 0, comm = 0, other_fixed = 0,
         activations = 0, fragmentation = 0;
  nlohmann::json to_json(const ProjectionInputs& in) const;  // inputs + every term, for the store
};

Projection project_peak(const ProjectionInputs& in);

// The inputs a stored projection was made from (Projection::to_json's "points",
// "breakdown", "terms.fragmentation" and target), so it can be re-projected to another
// micro-batch, world size or ZeRO stage. Throws std::invalid_argument naming the field
// that is missing or malformed.
ProjectionInputs projection_inputs_from_json(const nlohmann::json& stored);

// Fraction of each model-state term a rank holds under ZeRO stage z (0..3).
double zero_param_factor(int world, int zero);
double zero_grad_factor(int world, int zero);
double zero_optimizer_factor(int world, int zero);

}  // namespace sg::agent
