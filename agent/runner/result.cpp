#include "agent/runner/result.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "agent/common/files.hpp"
#include "agent/common/floats.hpp"
#include "agent/common/hash.hpp"
#include "agent/common/json_fields.hpp"

namespace sg::agent {
namespace {

using nlohmann::json;

using namespace json_fields;
using Invalid = InvalidField;

std::uint32_t bits(const json& o, const char* key) {
  auto b = parse_bits_hex(string(o, key));
  if (!b) throw Invalid{std::string("field '") + key + "' is not lower-case hex bits"};
  return *b;
}

std::vector<double> numbers(const json& o, const char* key) {
  const json& v = field(o, key);
  if (!v.is_array() || v.empty()) throw Invalid{std::string("field '") + key + "' is not a non-empty array"};
  std::vector<double> out;
  for (const auto& x : v) {
    if (!x.is_number()) throw Invalid{std::string("field '") + key + "' has a non-number"};
    out.push_back(x.get<double>());
  }
  return out;
}

TrialResult parse(const json& j) {
  TrialResult r;
  r.raw = j;
  if (!j.is_object()) throw Invalid{"not a JSON object"};
  if (integer(j, "protocol") != 1) throw Invalid{"protocol is not 1"};
  r.status = string(j, "status");
  if (r.status != "ok" && r.status != "oom" && r.status != "nan" && r.status != "error") {
    throw Invalid{"unknown status '" + r.status + "'"};
  }
  r.error = j.value("error", std::string());
  if (r.status != "ok") return r;
  r.seed = integer(j, "seed");
  r.steps = integer(j, "steps");
  r.micro_batch = integer(j, "micro_batch");
  r.grad_accum = optional_integer(j, "grad_accum", 1);
  r.world_size = optional_integer(j, "world_size", 1);
  const json& steps = field(j, "step_records");
  if (!steps.is_array() || steps.empty()) throw Invalid{"step_records is empty"};
  for (const auto& s : steps) {
    StepRecord rec;
    rec.step = integer(s, "step");
    rec.loss_bits = bits(s, "loss_bits");
    rec.grad_norm_bits = bits(s, "grad_norm_bits");
    rec.loss = float_from_bits(rec.loss_bits);
    rec.grad_norm = float_from_bits(rec.grad_norm_bits);
    rec.seconds = s.contains("seconds") && s["seconds"].is_number() ? s["seconds"].get<double>() : 0.0;
    r.step_records.push_back(rec);
  }
  if (static_cast<int>(r.step_records.size()) != r.steps) {
    throw Invalid{fmt::format("step_records has {} entries for {} steps", r.step_records.size(), r.steps)};
  }
  r.param_digest = string(j, "param_digest");
  r.optimizer_digest = string(j, "optimizer_digest");
  if (r.param_digest.empty() || r.optimizer_digest.empty()) throw Invalid{"empty digest"};
  if (!string(j, "eval_loss_bits").empty()) {
    r.eval_loss_bits = bits(j, "eval_loss_bits");
    r.eval_loss = float_from_bits(r.eval_loss_bits);
    r.has_eval = true;
  }
  r.samples_per_s = number(j, "samples_per_s");
  if (!(r.samples_per_s > 0) || !std::isfinite(r.samples_per_s)) throw Invalid{"samples_per_s is not positive"};
  r.tokens_per_s = j.contains("tokens_per_s") && j["tokens_per_s"].is_number() ? j["tokens_per_s"].get<double>() : 0.0;
  r.model_flops_per_step = j.contains("model_flops_per_step") && j["model_flops_per_step"].is_number()
                               ? j["model_flops_per_step"].get<double>() : 0.0;
  const json& mem = field(j, "memory");
  r.device = mem.value("device", std::string());
  r.peak_allocated = numbers(mem, "peak_allocated_bytes");
  r.peak_reserved = numbers(mem, "peak_reserved_bytes");
  if (mem.contains("phase_peak_allocated_bytes")) {
    const json& phases = mem["phase_peak_allocated_bytes"];
    if (!phases.is_object()) throw Invalid{"field 'phase_peak_allocated_bytes' is not an object"};
    for (const auto& [phase, bytes] : phases.items()) {
      if (!bytes.is_number() || !(bytes.get<double>() >= 0)) {
        throw Invalid{"field 'phase_peak_allocated_bytes' has a bad value for phase '" + phase + "'"};
      }
      r.phase_peak_allocated[phase] = bytes.get<double>();
    }
  }
  const json& bd = field(mem, "breakdown");
  r.breakdown.parameters = number(bd, "parameters");
  r.breakdown.gradients = number(bd, "gradients");
  r.breakdown.optimizer = number(bd, "optimizer");
  r.breakdown.frozen = number(bd, "frozen");
  r.breakdown.activations = number(bd, "activations");
  r.fingerprint = field(j, "fingerprint");
  if (!r.fingerprint.is_object()) throw Invalid{"fingerprint is not an object"};
  return r;
}

}  // namespace

double TrialResult::peak_allocated_max() const {
  return peak_allocated.empty() ? 0 : *std::max_element(peak_allocated.begin(), peak_allocated.end());
}
double TrialResult::peak_reserved_max() const {
  return peak_reserved.empty() ? 0 : *std::max_element(peak_reserved.begin(), peak_reserved.end());
}

ResultParse parse_result_text(const std::string& text) {
  ResultParse out;
  out.result = parse_document<TrialResult>(text, "result file", parse, &out.error);
  return out;
}

ResultParse parse_result_file(const std::string& path) {
  auto text = read_file(path, 256 << 20);
  if (!text) return ResultParse{std::nullopt, "result file missing: " + path};
  return parse_result_text(*text);
}

std::string fingerprint_hash(const json& fingerprint) {
  // json::dump sorts object keys, so the text is canonical.
  return fnv1a64_hex(fingerprint.dump());
}

}  // namespace sg::agent
