// The result file of `speedgate-train kernel-trial` (protocol §5), parsed strictly: a
// kernel family's variants timed on one layer's ops at the workload's shapes. The trial
// runs like any other (executor, process group, deadline, exit codes); its result also
// parses into a TrialResult header (status, error, device, fingerprint, raw) so the
// outcome is decoded the same way as a training run's.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/common/problem.hpp"
#include "agent/protocol/result.hpp"

namespace sg::agent {

struct KernelVariantTiming {
  std::string variant;               // plain_aten | fused_cuda | ...
  std::string params;                // "plain" or the parameter string, "threads=128,vec=2"
  double fwd_us = 0, fwdbwd_us = 0;  // summed over the family's ops
  bool matches_plain = false;        // outputs and input grads bitwise the plain variant's
  bool plain() const { return params == "plain"; }
};

struct KernelTrialResult {
  std::string status, error, family, device;
  std::string workload, size;  // optional in the file (for people); empty when absent
  int micro_batch = 0, repeats = 0;
  std::vector<std::string> ops;
  std::vector<KernelVariantTiming> variants;
  nlohmann::json fingerprint;
};

using KernelTrialParse = Parsed<KernelTrialResult>;

KernelTrialParse parse_kernel_trial_text(const std::string& text);

// The validated fields as parse_kernel_trial_text reads them back (what the store keeps).
nlohmann::json kernel_trial_json(const KernelTrialResult& r);

// A kernel trial's result text (or file) as a TrialResult header for decode_outcome: status and
// error always; device, fingerprint and raw for an ok result that parses as a kernel trial.
ResultParse parse_kernel_trial_as_result(const std::string& text);
ResultParse parse_kernel_trial_file_as_result(const std::string& path);

}  // namespace sg::agent
