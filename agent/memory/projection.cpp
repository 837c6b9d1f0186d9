#include "agent/memory/projection.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

namespace sg::agent {

LinearFit fit_peak(const std::vector<PeakPoint>& points) {
  std::set<int> distinct;
  for (const auto& p : points) distinct.insert(p.micro_batch);
  if (points.size() < 2 || distinct.size() < 2) {
    throw std::invalid_argument("memory fit needs peaks at >= 2 distinct micro-batches");
  }
  double n = static_cast<double>(points.size()), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& p : points) {
    double x = p.micro_batch, y = p.peak_bytes;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  LinearFit f;
  f.per_sample = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  f.fixed = (sy - f.per_sample * sx) / n;
  for (const auto& p : points) {
    f.max_residual = std::max(f.max_residual,
                              std::fabs(p.peak_bytes - (f.fixed + f.per_sample * p.micro_batch)));
  }
  return f;
}

LinearFit fit_peak_at(const std::vector<PeakPoint>& points, int target_micro_batch,
                      std::string* phase) {
  LinearFit overall = fit_peak(points);  // validates the points
  phase->clear();
  std::map<std::string, int> seen;
  for (const auto& p : points) {
    for (const auto& item : p.phases) ++seen[item.first];
  }
  std::optional<LinearFit> best;
  for (const auto& [name, count] : seen) {
    if (count != static_cast<int>(points.size())) continue;  // not measured at every point
    std::vector<PeakPoint> line;
    for (const auto& p : points) line.push_back({p.micro_batch, p.phases.at(name), 0, {}});
    LinearFit f = fit_peak(line);
    const auto at_target = [&](const LinearFit& x) {
      return x.fixed + x.per_sample * target_micro_batch;
    };
    if (!best || at_target(f) > at_target(*best)) {
      best = f;
      *phase = name;
    }
  }
  return best ? *best : overall;
}

double zero_param_factor(int world, int zero) { return zero >= 3 ? 1.0 / world : 1.0; }
double zero_grad_factor(int world, int zero) { return zero >= 2 ? 1.0 / world : 1.0; }
double zero_optimizer_factor(int world, int zero) { return zero >= 1 ? 1.0 / world : 1.0; }

Projection project_peak(const ProjectionInputs& in) {
  if (in.world_size < 1 || in.zero_stage < 0 || in.zero_stage > 3 || in.target_micro_batch < 1) {
    throw std::invalid_argument("projection: world size >= 1, ZeRO stage 0..3, micro-batch >= 1");
  }
  Projection p;
  p.fit = fit_peak_at(in.points, in.target_micro_batch, &p.phase);
  const auto& bd = in.breakdown;
  const int w = in.world_size, z = in.zero_stage;
  p.frozen = bd.frozen;
  p.params = bd.parameters * zero_param_factor(w, z);
  p.grads = bd.gradients * zero_grad_factor(w, z);
  p.optimizer = bd.optimizer * zero_optimizer_factor(w, z);
  p.comm = w > 1 ? std::min(bd.gradients, kCommBucketBytes * kCommBucketsInFlight) : 0.0;
  p.other_fixed =
      std::max(0.0, p.fit.fixed - (bd.frozen + bd.parameters + bd.gradients + bd.optimizer));
  p.activations = std::max(0.0, p.fit.per_sample) * in.target_micro_batch;
  p.fragmentation = std::max(0.0, in.fragmentation);
  p.peak_bytes = p.frozen + p.params + p.grads + p.optimizer + p.comm + p.other_fixed +
                 p.activations + p.fragmentation;
  return p;
}

nlohmann::json Projection::to_json(const ProjectionInputs& in) const {
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& x : in.points) {
    nlohmann::json pt = {{"micro_batch", x.micro_batch},
                         {"peak_bytes", x.peak_bytes},
                         {"reserved_bytes", x.reserved_bytes}};
    if (!x.phases.empty()) pt["phases"] = x.phases;
    pts.push_back(pt);
  }
  return {{"points", pts},
          {"breakdown",
           {{"parameters", in.breakdown.parameters},
            {"gradients", in.breakdown.gradients},
            {"optimizer", in.breakdown.optimizer},
            {"frozen", in.breakdown.frozen},
            {"activations", in.breakdown.activations}}},
          {"target_micro_batch", in.target_micro_batch},
          {"world_size", in.world_size},
          {"zero_stage", in.zero_stage},
          {"fit",
           {{"fixed", fit.fixed},
            {"per_sample", fit.per_sample},
            {"max_residual", fit.max_residual},
            {"phase", phase}}},
          {"terms",
           {{"frozen", frozen},
            {"params", params},
            {"grads", grads},
            {"optimizer", optimizer},
            {"comm", comm},
            {"other_fixed", other_fixed},
            {"activations", activations},
            {"fragmentation", fragmentation}}},
          {"peak_bytes", peak_bytes}};
}

namespace {

double number_at(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_number()) {
    throw std::invalid_argument("stored projection: " + where + key +
                                " is missing or not a number");
  }
  return j.at(key).get<double>();
}

}  // namespace

ProjectionInputs projection_inputs_from_json(const nlohmann::json& stored) {
  if (!stored.is_object())
    throw std::invalid_argument("stored projection: inputs are not a JSON object");
  ProjectionInputs in;
  if (!stored.contains("points") || !stored.at("points").is_array()) {
    throw std::invalid_argument("stored projection: points is missing or not an array");
  }
  for (const auto& pt : stored.at("points")) {
    PeakPoint point{static_cast<int>(number_at(pt, "micro_batch", "points[].")),
                    number_at(pt, "peak_bytes", "points[]."),
                    number_at(pt, "reserved_bytes", "points[]."),
                    {}};
    if (pt.contains("phases")) {
      if (!pt.at("phases").is_object())
        throw std::invalid_argument("stored projection: points[].phases is not an object");
      for (const auto& item : pt.at("phases").items()) {
        point.phases[item.key()] =
            number_at(pt.at("phases"), item.key().c_str(), "points[].phases.");
      }
    }
    in.points.push_back(std::move(point));
  }
  const auto& bd = stored.contains("breakdown") ? stored.at("breakdown") : nlohmann::json();
  in.breakdown.parameters = number_at(bd, "parameters", "breakdown.");
  in.breakdown.gradients = number_at(bd, "gradients", "breakdown.");
  in.breakdown.optimizer = number_at(bd, "optimizer", "breakdown.");
  in.breakdown.frozen = number_at(bd, "frozen", "breakdown.");
  in.breakdown.activations = number_at(bd, "activations", "breakdown.");
  in.fragmentation = number_at(stored.contains("terms") ? stored.at("terms") : nlohmann::json(),
                               "fragmentation", "terms.");
  in.target_micro_batch = static_cast<int>(number_at(stored, "target_micro_batch", ""));
  in.world_size = static_cast<int>(number_at(stored, "world_size", ""));
  in.zero_stage = static_cast<int>(number_at(stored, "zero_stage", ""));
  return in;
}

}  // namespace sg::agent
