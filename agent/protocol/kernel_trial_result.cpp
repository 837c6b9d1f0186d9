#include "agent/protocol/kernel_trial_result.hpp"

#include <cmath>

#include "agent/common/files.hpp"
#include "agent/common/json_array.hpp"
#include "agent/common/json_fields.hpp"

namespace sg::agent {
namespace {

using namespace json_fields;

double time_us(const json& o, const char* key) {
  const double v = number(o, key);
  if (!std::isfinite(v) || v < 0)
    throw InvalidField{std::string("field '") + key + "' is not a non-negative time"};
  return v;
}

KernelTrialResult parse(const json& j) {
  if (integer(j, "protocol") != 1) throw InvalidField{"unsupported protocol version"};
  if (string(j, "kind") != "kernel_trial") throw InvalidField{"field 'kind' is not 'kernel_trial'"};
  KernelTrialResult r;
  r.status = string(j, "status");
  r.error = j.contains("error") && j["error"].is_string()
                ? j["error"].get<std::string>().substr(0, 4096)
                : "";
  if (r.status != "ok") return r;  // oom/error: status and error are all there is
  if (j.contains("workload")) r.workload = string(j, "workload");
  if (j.contains("size")) r.size = string(j, "size");
  r.family = string(j, "family");
  r.device = string(j, "device");
  r.micro_batch = integer(j, "micro_batch");
  r.repeats = integer(j, "repeats");
  const json& ops = field(j, "ops");
  if (!ops.is_array() || ops.empty() || ops.size() > 4096)
    throw InvalidField{"field 'ops' is not a non-empty array"};
  for (const auto& op : ops) {
    if (!op.is_string()) throw InvalidField{"field 'ops' has a non-string entry"};
    r.ops.push_back(op.get<std::string>());
  }
  const json& variants = field(j, "variants");
  if (!variants.is_array() || variants.empty() || variants.size() > 4096)
    throw InvalidField{"field 'variants' is not a non-empty array"};
  for (const auto& v : variants) {
    KernelVariantTiming t;
    t.variant = string(v, "variant");
    t.params = string(v, "params");
    if (t.params.empty()) throw InvalidField{"a variant has empty 'params'"};
    t.fwd_us = time_us(v, "fwd_us");
    t.fwdbwd_us = time_us(v, "fwdbwd_us");
    const json& m = field(v, "matches_plain");
    if (!m.is_boolean()) throw InvalidField{"field 'matches_plain' is not a boolean"};
    t.matches_plain = m.get<bool>();
    r.variants.push_back(std::move(t));
  }
  r.fingerprint = field(j, "fingerprint");
  if (!r.fingerprint.is_object()) throw InvalidField{"fingerprint is not an object"};
  if (r.fingerprint.dump().size() > (64u << 10))
    throw InvalidField{"fingerprint is larger than 65536 bytes"};
  return r;
}

}  // namespace

KernelTrialParse parse_kernel_trial_text(const std::string& text) {
  return parse_document<KernelTrialResult>(text, "kernel-trial result", parse);
}

json kernel_trial_json(const KernelTrialResult& r) {
  json j = {{"protocol", 1}, {"kind", "kernel_trial"}, {"status", r.status}, {"error", r.error}};
  if (r.status != "ok") return j;
  const json variants = json_array(r.variants, [](const KernelVariantTiming& v) -> json {
    return {{"variant", v.variant},
            {"params", v.params},
            {"fwd_us", v.fwd_us},
            {"fwdbwd_us", v.fwdbwd_us},
            {"matches_plain", v.matches_plain}};
  });
  j.update({{"workload", r.workload},
            {"size", r.size},
            {"family", r.family},
            {"device", r.device},
            {"micro_batch", r.micro_batch},
            {"repeats", r.repeats},
            {"ops", r.ops},
            {"variants", variants},
            {"fingerprint", r.fingerprint}});
  return j;
}

ResultParse parse_kernel_trial_file_as_result(const std::string& path) {
  auto text = read_file(path, kResultLimits.max_bytes);
  if (!text) {
    return ResultParse{std::nullopt, "result file missing or larger than " +
                                         std::to_string(kResultLimits.max_bytes) +
                                         " bytes: " + path};
  }
  return parse_kernel_trial_as_result(*text);
}

ResultParse parse_kernel_trial_as_result(const std::string& text) {
  KernelTrialParse k = parse_kernel_trial_text(text);
  if (!k.result) return ResultParse{std::nullopt, k.error};
  TrialResult header;
  header.status = k.result->status;
  header.error = k.result->error;
  header.device = k.result->device;
  header.micro_batch = k.result->micro_batch;
  header.fingerprint = k.result->fingerprint;
  header.raw = kernel_trial_json(*k.result);
  return ResultParse{std::move(header), ""};
}

}  // namespace sg::agent
