#include "agent/protocol/result.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include <fmt/format.h>

#include "agent/common/files.hpp"
#include "agent/common/floats.hpp"
#include "agent/common/hash.hpp"
#include "agent/common/json_array.hpp"
#include "agent/common/json_fields.hpp"
#include "agent/common/json_limits.hpp"
#include "common/result/result_json.hpp"

namespace sg::agent {
namespace {

using nlohmann::json;

using namespace json_fields;
using Invalid = InvalidField;

// Bounds no real run comes near; a value beyond them is a lie or garbage.
constexpr double kMaxBytes = 1125899906842624.0;  // 1 PiB of device memory
constexpr double kMaxSamplesPerS = 1e12;
constexpr std::size_t kMaxListed = 4096;  // switches, ranks, phases
constexpr std::size_t kMaxFingerprintBytes = 64u << 10;
constexpr std::size_t kMaxErrorKept = 4096;

std::string name(const char* key) { return std::string("field '") + key + "'"; }

std::uint32_t bits(const json& o, const char* key) {
  auto b = parse_bits_hex(string(o, key));
  if (!b) throw Invalid{name(key) + " is not lower-case hex bits"};
  return *b;
}

// A finite number in [lo, hi]; the message names the field and prints the value compactly.
double bounded(double v, const std::string& what, double lo, double hi) {
  if (!std::isfinite(v) || v < lo || v > hi) {
    throw Invalid{fmt::format("{} is {:.6g}, outside [{:.6g}, {:.6g}]", what, v, lo, hi)};
  }
  return v;
}

double bounded_number(const json& o, const char* key, double lo, double hi) {
  return bounded(number(o, key), name(key), lo, hi);
}

double optional_number(const json& o, const char* key, double lo, double hi) {
  if (!o.contains(key) || o[key].is_null()) return 0.0;
  return bounded_number(o, key, lo, hi);
}

std::vector<double> byte_counts(const json& o, const char* key, double device_bytes) {
  const json& v = field(o, key);
  if (!v.is_array() || v.empty() || v.size() > kMaxListed) {
    throw Invalid{name(key) + fmt::format(" is not an array of 1..{} numbers", kMaxListed)};
  }
  std::vector<double> out;
  for (const auto& x : v) {
    if (!x.is_number()) throw Invalid{name(key) + " has a non-number"};
    out.push_back(bounded(x.get<double>(), name(key), 0, device_bytes));
  }
  return out;
}

void parse_switches(const json& j, TrialResult& r) {
  const json& sw = field(j, "switches");
  if (!sw.is_object() || sw.size() > kMaxListed)
    throw Invalid{"field 'switches' is not an object of strings"};
  for (const auto& [k, v] : sw.items()) {
    if (!v.is_string())
      throw Invalid{"field 'switches' has a non-string value for " + k.substr(0, 80)};
    r.switches[k] = v.get<std::string>();
  }
}

void parse_steps(const json& j, TrialResult& r) {
  const json& steps = field(j, "step_records");
  if (!steps.is_array() || steps.empty()) throw Invalid{"step_records is empty"};
  if (steps.size() != static_cast<std::size_t>(r.steps)) {
    throw Invalid{fmt::format("step_records has {} entries for {} steps", steps.size(), r.steps)};
  }
  for (const auto& s : steps) {
    StepRecord rec;
    rec.step = integer(s, "step");
    if (rec.step != static_cast<int>(r.step_records.size())) {
      throw Invalid{fmt::format("step_records[{}].step is {} (steps are numbered 0..{})",
                                r.step_records.size(), rec.step, r.steps - 1)};
    }
    rec.loss_bits = bits(s, "loss_bits");
    rec.grad_norm_bits = bits(s, "grad_norm_bits");
    rec.loss = float_from_bits(rec.loss_bits);
    rec.grad_norm = float_from_bits(rec.grad_norm_bits);
    rec.seconds = optional_number(s, "seconds", 0, 1e9);
    r.step_records.push_back(rec);
  }
}

void parse_memory(const json& j, TrialResult& r) {
  const json& mem = field(j, "memory");
  const double cap = r.device_memory_bytes > 0 ? r.device_memory_bytes : kMaxBytes;
  r.device = mem.value("device", std::string());
  r.peak_allocated = byte_counts(mem, "peak_allocated_bytes", cap);
  r.peak_reserved = byte_counts(mem, "peak_reserved_bytes", cap);
  if (mem.contains("phase_peak_allocated_bytes")) {
    const json& phases = mem["phase_peak_allocated_bytes"];
    if (!phases.is_object() || phases.size() > kMaxListed) {
      throw Invalid{"field 'phase_peak_allocated_bytes' is not an object"};
    }
    for (const auto& [phase, bytes] : phases.items()) {
      if (!bytes.is_number()) {
        throw Invalid{"field 'phase_peak_allocated_bytes' has a bad value for phase '" +
                      phase.substr(0, 80) + "'"};
      }
      r.phase_peak_allocated[phase] =
          bounded(bytes.get<double>(), "phase_peak_allocated_bytes." + phase.substr(0, 80), 0, cap);
    }
  }
  const json& bd = field(mem, "breakdown");
  r.breakdown.parameters = bounded_number(bd, "parameters", 0, kMaxBytes);
  r.breakdown.gradients = bounded_number(bd, "gradients", 0, kMaxBytes);
  r.breakdown.optimizer = bounded_number(bd, "optimizer", 0, kMaxBytes);
  r.breakdown.frozen = bounded_number(bd, "frozen", 0, kMaxBytes);
  r.breakdown.activations = bounded_number(bd, "activations", 0, kMaxBytes);
}

void parse_fingerprint(const json& j, TrialResult& r) {
  r.fingerprint = field(j, "fingerprint");
  if (!r.fingerprint.is_object()) throw Invalid{"fingerprint is not an object"};
  if (r.fingerprint.dump().size() > kMaxFingerprintBytes) {
    throw Invalid{fmt::format("fingerprint is larger than {} bytes", kMaxFingerprintBytes)};
  }
  if (r.fingerprint.contains("threads")) r.threads = integer(r.fingerprint, "threads");
  if (r.fingerprint.contains("device_memory_bytes")) {
    r.device_memory_bytes = bounded_number(r.fingerprint, "device_memory_bytes", 1, kMaxBytes);
  }
}

// The fields speedgate uses, as parse() reads them back: what the store keeps.
json canonical(const TrialResult& r) {
  json j = {{"protocol", 1}, {"status", r.status}, {"error", r.error.substr(0, kMaxErrorKept)}};
  if (r.status != "ok") return j;
  const json steps = json_array(r.step_records, [](const StepRecord& s) -> json {
    return {{"step", s.step},
            {"loss_bits", sg::bits_hex(s.loss_bits)},
            {"grad_norm_bits", sg::bits_hex(s.grad_norm_bits)},
            {"seconds", s.seconds}};
  });
  const json memory = sg::memory_json(r.device, r.peak_allocated, r.peak_reserved, r.breakdown,
                                      r.phase_peak_allocated);
  j.update({{"workload", r.workload},
            {"size", r.size},
            {"seed", r.seed},
            {"steps", r.steps},
            {"micro_batch", r.micro_batch},
            {"grad_accum", r.grad_accum},
            {"world_size", r.world_size},
            {"switches", r.switches},
            {"step_records", steps},
            {"param_digest", r.param_digest},
            {"optimizer_digest", r.optimizer_digest},
            {"eval_loss_bits", r.has_eval ? sg::bits_hex(r.eval_loss_bits) : std::string()},
            {"samples_per_s", r.samples_per_s},
            {"tokens_per_s", r.tokens_per_s},
            {"model_flops_per_step", r.model_flops_per_step},
            {"memory", memory},
            {"fingerprint", r.fingerprint}});
  if (r.steady_state_steps >= 0) j["steady_state_steps"] = r.steady_state_steps;
  return j;
}

// A required (def 0) or optional integer >= 1.
int positive(const json& j, const char* key, int def = 0) {
  const int v = def == 0 || j.contains(key) ? integer(j, key) : def;
  if (v < 1) throw Invalid{fmt::format("{} is {}, not >= 1", name(key), v)};
  return v;
}

TrialResult parse(const json& j) {
  TrialResult r;
  if (!j.is_object()) throw Invalid{"not a JSON object"};
  if (integer(j, "protocol") != 1) throw Invalid{"protocol is not 1"};
  r.status = string(j, "status");
  if (r.status != "ok" && r.status != "oom" && r.status != "nan" && r.status != "error") {
    throw Invalid{"unknown status '" + r.status.substr(0, 80) + "'"};
  }
  r.error =
      j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>() : std::string();
  if (r.status != "ok") {
    r.raw = canonical(r);
    return r;
  }
  r.workload = string(j, "workload");
  r.size = string(j, "size");
  parse_switches(j, r);
  r.seed = integer(j, "seed");
  r.steps = positive(j, "steps");
  r.micro_batch = positive(j, "micro_batch");
  r.grad_accum = positive(j, "grad_accum", 1);
  r.world_size = positive(j, "world_size", 1);
  parse_steps(j, r);
  r.param_digest = string(j, "param_digest");
  r.optimizer_digest = string(j, "optimizer_digest");
  if (r.param_digest.empty() || r.optimizer_digest.empty()) throw Invalid{"empty digest"};
  if (r.param_digest.size() > 256 || r.optimizer_digest.size() > 256)
    throw Invalid{"digest longer than 256 bytes"};
  if (!string(j, "eval_loss_bits").empty()) {
    r.eval_loss_bits = bits(j, "eval_loss_bits");
    r.eval_loss = float_from_bits(r.eval_loss_bits);
    r.has_eval = true;
  }
  const double sps = number(j, "samples_per_s");
  if (!(sps > 0)) throw Invalid{fmt::format("field 'samples_per_s' is {:.6g}, not positive", sps)};
  r.samples_per_s = bounded(sps, "field 'samples_per_s'", 0, kMaxSamplesPerS);
  r.tokens_per_s = optional_number(j, "tokens_per_s", 0, kMaxSamplesPerS * 1e6);
  r.model_flops_per_step = optional_number(j, "model_flops_per_step", 0, 1e30);
  if (j.contains("steady_state_steps")) {
    r.steady_state_steps = integer(j, "steady_state_steps");
    if (r.steady_state_steps < 0 || r.steady_state_steps > r.steps) {
      throw Invalid{fmt::format("field 'steady_state_steps' is {}, outside 0..{}",
                                r.steady_state_steps, r.steps)};
    }
  }
  parse_fingerprint(j, r);
  parse_memory(j, r);
  r.raw = canonical(r);
  return r;
}

}  // namespace

double TrialResult::peak_allocated_max() const {
  return peak_allocated.empty() ? 0
                                : *std::max_element(peak_allocated.begin(), peak_allocated.end());
}
double TrialResult::peak_reserved_max() const {
  return peak_reserved.empty() ? 0 : *std::max_element(peak_reserved.begin(), peak_reserved.end());
}

ResultParse parse_result_text(const std::string& text) {
  ResultParse out = parse_document<TrialResult>(text, "result file", parse, kResultLimits);
  if (!out.result && out.error.find("missing field") != std::string::npos) {
    out.error += std::string(" (required by ") + kResultSchema + ")";
  }
  return out;
}

ResultParse parse_result_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return ResultParse{std::nullopt, "result file missing: " + path};
  if (!S_ISREG(st.st_mode))
    return ResultParse{std::nullopt, "result file is not a regular file: " + path};
  if (static_cast<std::size_t>(st.st_size) > kResultLimits.max_bytes) {
    return ResultParse{std::nullopt,
                       fmt::format("result file is larger than {} bytes ({} bytes): {}",
                                   kResultLimits.max_bytes, st.st_size, path)};
  }
  auto text = read_file(path, kResultLimits.max_bytes);
  if (!text)
    return ResultParse{std::nullopt, "result file unreadable or grew past the cap: " + path};
  return parse_result_text(*text);
}

std::string fingerprint_hash(const json& fingerprint) {
  // json::dump sorts object keys, so the text is canonical.
  return fnv1a64_hex(fingerprint.dump());
}

}  // namespace sg::agent
