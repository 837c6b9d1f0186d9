// The lm training loop, top to bottom: build, load data, step, evaluate, report. Like
// wam's (trainer/workload/wam/wam_train_loop.cpp: fixed seeds, AdamW, clipping, bf16
// autocast on CUDA), with the loss averaged over the real tokens of the whole step: the
// step's micro-batches are collated first, and each micro-batch's summed loss is divided
// by the step's total, so G micro-batches of b rows give the gradient of one batch of G·b
// rows. Registered as workloads "lm" and "lm_osft" (lm_registration.cpp).
#include "trainer/workload/lm/lm_train_loop.hpp"
#include "trainer/runtime/perturb.hpp"

#include "kernels/common/dispatch.hpp"
#include "trainer/errors.hpp"
#include "trainer/model/init_device.hpp"
#include "trainer/optim/adamw_util.hpp"
#include "trainer/optim/recipe.hpp"
#include "trainer/result/digest.hpp"
#include "trainer/runtime/autocast.hpp"
#include "trainer/runtime/memory_tracker.hpp"
#include "trainer/runtime/op_profile.hpp"
#include "trainer/runtime/seed.hpp"
#include "trainer/test_faults.hpp"
#include "trainer/workload/lm/corpus.hpp"
#include "trainer/workload/lm/lm_config.hpp"
#include "trainer/workload/lm/lm_model.hpp"
#include "trainer/workload/lm/packing.hpp"
#include "trainer/workload/run_context.hpp"

#include <torch/torch.h>

#include <chrono>
#include <cmath>

namespace sg::trainer {
namespace {

using Clock = std::chrono::steady_clock;

int64_t bytes_of(const std::vector<at::Tensor>& ts) {
  int64_t n = 0;
  for (const auto& t : ts) n += t.numel() * static_cast<int64_t>(t.element_size());
  return n;
}

float eval_loss(LmModel& model, const Corpus& corpus, const LmConfig& cfg, int64_t micro,
                int64_t batches, bool pad_to_8, c10::Device device) {
  torch::NoGradGuard no_grad;
  AutocastScope autocast({device.is_cuda(), at::kBFloat16});
  PackedRows rows(corpus, cfg.seq_len, kEvalSeed);
  at::Tensor total = at::zeros({}, at::kFloat);
  int64_t tokens = 0;
  for (int64_t i = 0; i < batches; ++i) {
    const LmBatch batch = make_batch(rows, kEvalFirstSample + i * micro, micro, pad_to_8, device);
    total = total + model->loss_sum(batch).to(at::kCPU);
    tokens += batch.real_tokens;
  }
  return (total / static_cast<double>(tokens)).item<float>();
}

// An lm run's objects once built, by reference (they live in run_lm_training), and the
// token counts the steps accumulate for the report.
struct LmRun : RunContext {
  const LmConfig& cfg;
  const Corpus& corpus;
  PackedRows& rows;
  LmModel& model;
  const std::vector<std::pair<std::string, at::Tensor>>& named;
  std::vector<at::Tensor>& params;
  torch::optim::AdamW& optim;
  const AutocastState& autocast;
  OpProfile& op_profile;
  uint64_t seed;
  int64_t micro;
  int64_t accum;
  int64_t rows_per_step;
  int64_t first_row;
  int64_t warmup;
  double flops_per_token;
  int64_t real_tokens = 0, steady_tokens = 0, positions = 0;
  std::vector<int64_t> lengths;

  // The steps, then the op profile. Throws what a step throws.
  void train();
  // Evaluation, digests, throughput, memory and extras into r; sets r.status "ok".
  void finish();
};

}  // namespace

void run_lm_training(const RunOptions& opt, const Switches& sw, const Runtime& rt, RunResult& r,
                     bool osft) {
  // ---- configuration ----
  const LmConfig& cfg = lm_config(opt.size);
  const int64_t micro = opt.micro_batch > 0 ? opt.micro_batch : cfg.default_micro_batch;
  const int64_t accum = opt.grad_accum;
  const TestFaults faults = TestFaults::from_environment();
  start_result(opt, sw, rt, micro, r);
  const uint64_t seed = static_cast<uint64_t>(opt.seed);
  const int64_t rows_per_step = micro * accum * rt.world_size;
  const double flops_per_token = lm_model_flops_per_token(cfg);
  r.model_flops_per_step = flops_per_token * static_cast<double>(cfg.seq_len * rows_per_step);
  OpProfile op_profile(rt.device,
                       /*writer=*/true);  // SPEEDGATE_PROFILE_OPS: checked before any work

  // ---- data: the corpus, read now (exit 2 when missing) ----
  const Corpus corpus = load_corpus(corpus_dir_from_environment(), cfg.vocab);
  PackedRows rows(corpus, cfg.seq_len, seed);
  const int64_t first_row = int64_t{rt.rank} * (int64_t{1} << 32);

  // ---- build: model (fp32 master weights, made on the device), optimizer ----
  const auto build_start = Clock::now();
  sg::kernels::KernelSelection kernels;  // of the fused families only ROPE applies to lm
  kernels.fused["ROPE"] = sw.fused_rope;
  kernels.params = sw.kernel_params;
  sg::kernels::select_kernels(kernels);
  torch::manual_seed(mix_seed(seed, 0x6d6f64656c));
  LmModelOptions mo;
  mo.backend = parse_attn_backend(sw.attn_backend);
  mo.ckpt_layers = sw.ckpt_layers;
  mo.osft = osft;
  mo.cuda_graphs = sw.cuda_graphs;
  LmModel model = [&] {
    ParameterDeviceScope on_device(rt.device);
    return LmModel(cfg, mo);
  }();
  require_on_device(*model, rt.device);
  release_cached_memory(rt.device);  // OSFT's float64 SVD workspaces
  std::vector<std::pair<std::string, at::Tensor>> named;
  std::vector<at::Tensor> params;
  for (const auto& item : model->named_parameters()) {
    named.emplace_back(item.key(), item.value());
    params.push_back(item.value());
  }
  perturb_parameters(named, opt.perturb, seed);
  if (opt.perturb > 0) r.extra["perturb"] = opt.perturb;
  torch::optim::AdamW optim(params,
                            torch::optim::AdamWOptions(kLearningRate).weight_decay(kWeightDecay));
  const AutocastState autocast{rt.device.is_cuda(), at::kBFloat16};
  r.extra["build_seconds"] = std::chrono::duration<double>(Clock::now() - build_start).count();

  // ---- train ----
  const int64_t warmup = opt.steps > opt.warmup_steps ? opt.warmup_steps : 0;
  reset_memory_peaks(rt.device);
  if (!opt.heartbeat_path.empty()) write_heartbeat(opt.heartbeat_path, 0);
  LmRun run{{opt, sw, rt, r, faults},
            cfg,
            corpus,
            rows,
            model,
            named,
            params,
            optim,
            autocast,
            op_profile,
            seed,
            micro,
            accum,
            rows_per_step,
            first_row,
            warmup,
            flops_per_token};
  run.train();
  run.finish();
}

namespace {

void LmRun::train() {
  for (int64_t step = 0; step < opt.steps; ++step) {
    if (step == warmup) op_profile.start();
    const auto t0 = Clock::now();
    torch::manual_seed(
        mix_seed(mix_seed(seed, static_cast<uint64_t>(rt.rank)), static_cast<uint64_t>(step)));
    for (auto& p : params) p.mutable_grad() = at::Tensor();
    std::vector<LmBatch> batches;
    int64_t step_tokens = 0;
    for (int64_t g = 0; g < accum; ++g) {
      batches.push_back(
          make_batch(rows, first_row + (step * accum + g) * micro, micro, sw.pad_to_8, rt.device));
      step_tokens += batches.back().real_tokens;
      lengths.push_back(batches.back().length);
      positions += micro * batches.back().length;
    }
    at::Tensor logged = at::zeros({}, at::kFloat);
    for (const auto& batch : batches) {
      at::Tensor loss_sum;
      {
        AutocastScope scope(autocast);
        loss_sum = model->loss_sum(batch);
      }
      if (faults.nan_loss && step == 1) loss_sum = loss_sum * std::nan("");
      if (faults.oom && step == 1)
        throw std::runtime_error("CUDA out of memory (injected by SPEEDGATE_TEST_FAULT=oom)");
      logged = logged + loss_sum.detach().to(at::kCPU);
      // Token-weighted mean over the whole step; the test fault takes each micro-batch's
      // own mean instead and sums them (G x the norm).
      const double denom =
          static_cast<double>(faults.grad_accum_sum ? batch.real_tokens : step_tokens);
      (loss_sum / denom).backward();
    }
    const float loss_value = (logged / static_cast<double>(step_tokens)).item<float>();
    const float grad_norm = clip_grad_norm(params, kMaxGradNorm).item<float>();
    r.step_records.push_back({step, loss_value, grad_norm, 0.0});
    if (!std::isfinite(loss_value) || !std::isfinite(grad_norm)) {
      throw NonFiniteError("non-finite loss or gradient norm at step " + std::to_string(step));
    }
    optim.step();
    r.step_records.back().seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    real_tokens += step_tokens;
    if (step >= warmup) steady_tokens += step_tokens;
    if (!opt.heartbeat_path.empty()) write_heartbeat(opt.heartbeat_path, step + 1);
  }
  op_profile.finish(opt.steps - warmup);
}

void LmRun::finish() {
  // ---- evaluate ----
  if (opt.eval_batches > 0) {
    r.eval_loss = eval_loss(model, corpus, cfg, micro, opt.eval_batches, sw.pad_to_8, rt.device);
    r.has_eval = true;
  }

  // ---- report: digests, throughput (real tokens only), memory ----
  int64_t optimizer_bytes = 0;
  r.param_digest = digest_tensors(named);
  r.optimizer_digest = optimizer_digest(optim, named, &optimizer_bytes);
  const double seconds = record_steady_throughput(opt, warmup, rows_per_step, r);
  r.tokens_per_s = seconds > 0 ? static_cast<double>(steady_tokens) / seconds : 0.0;

  const auto peaks = memory_peaks(rt.device);
  r.peak_allocated = {peaks.allocated};
  r.peak_reserved = {peaks.reserved};
  r.breakdown =
      memory_breakdown(params, optimizer_bytes, bytes_of(model->buffers()), peaks.allocated);

  r.extra["lm"] = {{"real_tokens", real_tokens},
                   {"positions", positions},
                   {"batch_lengths", lengths},
                   {"flops_per_token", flops_per_token},
                   {"corpus_dir", corpus.dir},
                   {"corpus_files", corpus.files.size()},
                   {"corpus_documents", corpus.documents.size()},
                   {"corpus_tokens", corpus.tokens()}};
  if (!faults.name().empty()) r.extra["test_fault"] = faults.name();
  r.status = "ok";
}

}  // namespace

}  // namespace sg::trainer
