#include "trainer/kernel_trial.hpp"

#include "common/suggest/suggest.hpp"
#include "kernels/common/dispatch.hpp"
#include "kernels/common/timing/op_cases.hpp"
#include "kernels/common/timing/op_timer.hpp"
#include "trainer/errors.hpp"
#include "trainer/result/run_result.hpp"
#include "trainer/runtime/runtime.hpp"
#include "trainer/switches/switch_table.hpp"
#include "trainer/workload/wam/wam_config.hpp"
#include "trainer/workload/workload.hpp"

#include <torch/csrc/autograd/autograd.h>

#include <iostream>
#include <nlohmann/json.hpp>

namespace sg::trainer {
namespace {

constexpr int kInputSets = 3;
constexpr const char* kPlain = "plain";

// One requested variant, resolved before anything runs.
struct Requested {
  std::string text;  // as given ("plain" or canonical "threads=128,vec=2")
  bool plain = false;
  sg::kernels::ParamValues params;
};

void check_kernel_trial(const KernelTrialOptions& o) {
  if (o.result_path.empty()) throw BadInputError("--result PATH is required");
  const Workload* w = find_workload(o.workload);
  if (w == nullptr || !w->kernel_trial) {  // the ops timed below are wam's (its layer, its sizes)
    throw BadInputError("kernel-trial: workload '" + o.workload + "' has no kernel families (" +
                        sg::join_names(workload_names_with(&Workload::kernel_trial)) + " has)");
  }
  if (o.size.empty()) throw BadInputError("--size is required");
  if (o.family.empty()) throw BadInputError("--family is required");
  if (o.micro_batch < 0 || o.timer.repeats < 1 || o.timer.warmup < 0 || o.threads < 1) {
    throw BadInputError("--micro-batch must be >= 0, --repeats and --threads >= 1, --warmup >= 0");
  }
}

// `fused` = the family's fused variant can run here (built in, and the device is CUDA).
std::vector<Requested> resolve_variants(const KernelTrialOptions& o,
                                        const sg::kernels::FamilyInfo& fam, bool fused) {
  std::vector<Requested> out;
  auto add_fused = [&](const sg::kernels::ParamValues& p) {
    out.push_back({sg::kernels::params_text(p), false, p});
  };
  if (o.variants.empty()) {
    out.push_back({kPlain, true, {}});
    if (fused) {
      for (const auto& p : sg::kernels::legal_params(fam)) add_fused(p);
    }
    return out;
  }
  for (const auto& text : o.variants) {
    if (text == kPlain) {
      out.push_back({kPlain, true, {}});
      continue;
    }
    if (!fused) {
      throw BadInputError(
          "--variant " + text + ": family " + fam.name + " has no fused variant here (" +
          (fam.available ? std::string("no CUDA device") : fam.unavailable_reason) + ")");
    }
    sg::kernels::ParamValues p;
    const std::string err = sg::kernels::parse_params(fam, text, &p);
    if (!err.empty()) throw BadInputError("--variant " + text + ": " + err);
    add_fused(p);
  }
  return out;
}

// Forward outputs and input grads of set 0 (fixed incoming grads), for the bitwise check.
std::vector<at::Tensor> outputs_and_grads(const sg::kernels::OpCase& op,
                                          const sg::kernels::ParamValues* p,
                                          const std::vector<at::Tensor>& seeds) {
  std::vector<at::Tensor> leaves;
  for (const auto& t : op.sets[0]) leaves.push_back(t.detach().requires_grad_(true));
  auto outs = op.run(leaves, p);
  auto grads = torch::autograd::grad(outs, leaves, seeds, false, false, /*allow_unused=*/true);
  for (auto& o : outs) o = o.detach();
  outs.insert(outs.end(), grads.begin(), grads.end());
  return outs;
}

bool same_bits(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].defined() != b[i].defined()) return false;
    if (a[i].defined() && !sg::kernels::bitwise_equal(a[i], b[i])) return false;
  }
  return true;
}

nlohmann::json run_trial(const KernelTrialOptions& o, const sg::kernels::FamilyInfo& fam,
                         const std::vector<Requested>& variants, const Runtime& rt) {
  const WamConfig& cfg = wam_config(o.size);
  sg::kernels::KernelShape shape;
  shape.batch = o.micro_batch > 0 ? o.micro_batch : cfg.default_micro_batch;
  shape.video_tokens = cfg.video_tokens();
  shape.action_tokens = cfg.action_tokens;
  shape.heads = cfg.heads;
  shape.head_dim = cfg.head_dim;
  shape.latent_frames = cfg.latent_frames();
  shape.grid_h = cfg.grid_h();
  shape.grid_w = cfg.grid_w();
  shape.device = rt.device;
  const auto ops = sg::kernels::op_cases(fam.name, shape, kInputSets);
  // The plain variant's outputs and grads on set 0: what every variant must reproduce.
  std::vector<std::vector<at::Tensor>> seeds, reference;
  for (const auto& op : ops) {
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> s;
    for (const auto& out : op.run(op.sets[0], nullptr)) s.push_back(at::randn_like(out));
    seeds.push_back(s);
  }
  for (size_t i = 0; i < ops.size(); ++i)
    reference.push_back(outputs_and_grads(ops[i], nullptr, seeds[i]));

  nlohmann::json rows = nlohmann::json::array(), op_names = nlohmann::json::array();
  for (const auto& op : ops) op_names.push_back(op.op);
  for (const auto& v : variants) {
    const sg::kernels::ParamValues* p = v.plain ? nullptr : &v.params;
    nlohmann::json per_op = nlohmann::json::array();
    double fwd_us = 0, fwdbwd_us = 0;
    bool matches = true;
    for (size_t i = 0; i < ops.size(); ++i) {
      const auto t = sg::kernels::time_op(ops[i], p, o.timer);
      fwd_us += t.fwd_ms * 1e3;
      fwdbwd_us += t.fwdbwd_ms * 1e3;
      per_op.push_back(
          {{"op", ops[i].op}, {"fwd_us", t.fwd_ms * 1e3}, {"fwdbwd_us", t.fwdbwd_ms * 1e3}});
      if (p != nullptr)
        matches = matches && same_bits(outputs_and_grads(ops[i], p, seeds[i]), reference[i]);
    }
    rows.push_back({{"variant", v.plain ? "plain_aten" : "fused_cuda"},
                    {"params", v.text},
                    {"fwd_us", fwd_us},
                    {"fwdbwd_us", fwdbwd_us},
                    {"matches_plain", matches},
                    {"ops", per_op}});
  }
  return {{"ops", op_names},
          {"variants", rows},
          {"shape",
           {{"batch", shape.batch},
            {"video_tokens", shape.video_tokens},
            {"action_tokens", shape.action_tokens},
            {"heads", shape.heads},
            {"head_dim", shape.head_dim}}}};
}

}  // namespace

void add_kernel_trial_options(CLI::App& app, KernelTrialOptions& o) {
  app.add_option("--workload", o.workload, "workload (only wam has kernel families)")
      ->capture_default_str();
  app.add_option("--size", o.size, "size whose layer shapes are timed (required)");
  app.add_option("--micro-batch", o.micro_batch, "samples (0 = the size's default)")
      ->capture_default_str();
  app.add_option("--family", o.family, "kernel family (describe --json lists them; required)");
  app.add_option("--variant", o.variants,
                 "plain or PARAMS (e.g. threads=128,vec=2), repeatable; default: plain and "
                 "every legal variant")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--repeats", o.timer.repeats, "timed repetitions per variant")
      ->capture_default_str();
  app.add_option("--warmup", o.timer.warmup, "untimed repetitions first")->capture_default_str();
  app.add_option("--threads", o.threads, "intra-op CPU threads")->capture_default_str();
  app.add_option("--result", o.result_path, "where to write the result JSON (required)");
  app.add_option("--heartbeat", o.heartbeat_path, "file touched while it runs");
}

int kernel_trial_command(const KernelTrialOptions& options) {
  KernelTrialOptions o = options;
  std::vector<Requested> variants;
  const sg::kernels::FamilyInfo* fam = nullptr;
  Runtime rt;
  try {
    check_kernel_trial(o);
    wam_config(o.size);  // throws for an unknown size
    for (const auto& f : sg::kernels::families()) {
      if (f.name == o.family) fam = &f;
    }
    if (fam == nullptr)
      throw BadInputError("unknown kernel family '" + o.family + "' (see describe --json)");
    // Time the kernels, not deterministic mode's NaN fill of every new tensor (NO_UNINIT_FILL):
    // the fill adds the same kernels to every variant and flattens the differences that rank
    // them (the H200 kernel trials timed ROPE ~100 us slower than the bench). It changes no result.
    Switches sw;
    sw.no_uninit_fill = true;
    rt = setup_runtime(o.threads, sw);
    variants = resolve_variants(o, *fam, fam->available && rt.device.is_cuda());
    if (!o.heartbeat_path.empty()) write_heartbeat(o.heartbeat_path, 0);
  } catch (const BadInputError& e) {
    std::cerr << "speedgate-train: " << e.what() << "\n";
    return 2;
  }
  nlohmann::json r = {
      {"protocol", 1},
      {"kind", "kernel_trial"},
      {"status", "ok"},
      {"error", ""},
      {"workload", o.workload},
      {"size", o.size},
      {"micro_batch", o.micro_batch > 0 ? o.micro_batch : wam_config(o.size).default_micro_batch},
      {"family", fam->name},
      {"device", rt.device.str()},
      {"warmup", o.timer.warmup},
      {"repeats", o.timer.repeats}};
  int code = 0;
  try {
    r.update(run_trial(o, *fam, variants, rt));
  } catch (const std::exception& e) {
    const bool oom = is_out_of_memory(e);
    r["status"] = oom ? "oom" : "error";
    r["error"] = e.what();
    code = oom ? 3 : 1;
    std::cerr << "speedgate-train: kernel-trial " << r["status"].get<std::string>() << ": "
              << e.what() << "\n";
  }
  r["fingerprint"] = fingerprint(rt);
  try {
    write_file_atomically(o.result_path, r.dump(2) + "\n");
  } catch (const std::exception& e) {
    std::cerr << "speedgate-train: cannot write result: " << e.what() << "\n";
    return code == 0 ? 1 : code;
  }
  return code;
}

}  // namespace sg::trainer
