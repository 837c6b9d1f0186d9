#include "agent/runner/result_check.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace sg::agent {
namespace {

// A steady step at the claimed throughput may differ from its own recorded seconds by
// at most this factor (generous: warm-up accounting and clock granularity differ).
constexpr double kStepTimeFactor = 100;

template <class T>
Problem differs(const char* field, const T& got, const T& launched) {
  if (got == launched) return std::nullopt;
  return fmt::format("result field {} is {}, the trial launched {} {}", field, got, field,
                     launched);
}

std::string quoted(const std::string& s) {
  return "'" + s.substr(0, 80) + (s.size() > 80 ? "...'" : "'");
}

Problem switch_mismatch(const TrialRequest& req, const TrialResult& r) {
  for (const auto& [key, value] : req.switch_env) {
    auto it = r.switches.find(key);
    if (it == r.switches.end()) {
      return fmt::format("result field switches lacks {}, the trial launched {}={}", key, key,
                         value);
    }
    if (it->second != value) {
      return fmt::format("result field switches.{} is {}, the trial launched {}", key,
                         quoted(it->second), quoted(value));
    }
  }
  return std::nullopt;
}

// The process ran wall_s; its steps cannot have taken longer, and the claimed throughput
// must agree with the steps' own times.
Problem timing_mismatch(const TrialResult& r, double wall_s) {
  const int n = r.steady_state_steps >= 1 ? r.steady_state_steps : std::max(1, r.steps - 2);
  double recorded = 0, all = 0;
  for (std::size_t i = 0; i < r.step_records.size(); ++i) {
    all += r.step_records[i].seconds;
    if (i + static_cast<std::size_t>(n) >= r.step_records.size())
      recorded += r.step_records[i].seconds;
  }
  const double samples = static_cast<double>(n) * r.micro_batch * r.grad_accum * r.world_size;
  const double claimed = samples / r.samples_per_s;
  const double slack = 1.0;  // seconds: timer and clock granularity
  if (wall_s > 0 && all > wall_s + slack) {
    return fmt::format(
        "result field step_records.seconds sums to {:.3g} s, longer than the process ran ({:.3g} "
        "s)",
        all, wall_s);
  }
  if (wall_s > 0 && claimed > wall_s + slack) {
    return fmt::format(
        "result field samples_per_s is {:.6g}: {} steady steps would take {:.3g} s, longer than "
        "the "
        "process ran ({:.3g} s)",
        r.samples_per_s, n, claimed, wall_s);
  }
  if (recorded > 0 && claimed * kStepTimeFactor < recorded) {
    return fmt::format(
        "result field samples_per_s is {:.6g}: {} steady steps would take {:.3g} s, but their "
        "step records took {:.3g} s",
        r.samples_per_s, n, claimed, recorded);
  }
  return std::nullopt;
}

}  // namespace

Problem result_mismatch(const TrialRequest& req, const TrialResult& r, double wall_s) {
  Problem e;
  if ((e = differs("workload", quoted(r.workload), quoted(req.workload)))) return e;
  if ((e = differs("size", quoted(r.size), quoted(req.size)))) return e;
  if ((e = differs("seed", r.seed, req.seed))) return e;
  if ((e = differs("steps", r.steps, req.steps))) return e;
  if (req.micro_batch > 0 && (e = differs("micro_batch", r.micro_batch, req.micro_batch))) return e;
  if ((e = differs("grad_accum", r.grad_accum, req.grad_accum))) return e;
  if ((e = differs("world_size", r.world_size, std::max(1, req.world_size)))) return e;
  if (r.threads >= 0 && (e = differs("fingerprint.threads", r.threads, req.threads))) return e;
  if ((e = switch_mismatch(req, r))) return e;
  return timing_mismatch(r, wall_s);
}

Problem kernel_result_mismatch(const TrialRequest& req, const KernelTrialResult& r) {
  Problem e;
  if (!req.kernel) return "a kernel-trial result for a training trial";
  if ((e = differs("family", quoted(r.family), quoted(req.kernel->family)))) return e;
  if (!r.workload.empty() && (e = differs("workload", quoted(r.workload), quoted(req.workload))))
    return e;
  if (!r.size.empty() && (e = differs("size", quoted(r.size), quoted(req.size)))) return e;
  if (req.micro_batch > 0 && (e = differs("micro_batch", r.micro_batch, req.micro_batch))) return e;
  if ((e = differs("repeats", r.repeats, req.kernel->repeats))) return e;
  const auto& asked = req.kernel->variants;
  if (!asked.empty() && r.variants.size() != asked.size()) {
    return fmt::format("result field variants has {} entries, the trial launched {} variants",
                       r.variants.size(), asked.size());
  }
  return std::nullopt;
}

Problem non_finite_value(const TrialResult& r) {
  for (const auto& s : r.step_records) {
    if (!std::isfinite(s.loss))
      return fmt::format("step {} loss is non-finite (bits {:08x})", s.step, s.loss_bits);
    if (!std::isfinite(s.grad_norm)) {
      return fmt::format("step {} grad norm is non-finite (bits {:08x})", s.step, s.grad_norm_bits);
    }
  }
  if (r.has_eval && !std::isfinite(r.eval_loss)) {
    return fmt::format("eval loss is non-finite (bits {:08x})", r.eval_loss_bits);
  }
  return std::nullopt;
}

}  // namespace sg::agent
