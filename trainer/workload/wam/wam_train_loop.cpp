// The wam training loop, top to bottom: build, load data, step, evaluate, report.
// Switch-dependent paths live in the modules they change (wam_workload.cpp, text/,
// data/, the shared layers); this file only wires them. Registered as workload "wam".
#include "trainer/runtime/perturb.hpp"
#include "trainer/train_loop.hpp"

#include <algorithm>

#include "trainer/distributed/gradient_buckets.hpp"
#include "trainer/distributed/sharded_adamw.hpp"
#include "trainer/errors.hpp"
#include "trainer/optim/adamw_util.hpp"
#include "trainer/optim/recipe.hpp"
#include "trainer/result/digest.hpp"
#include "trainer/runtime/memory_tracker.hpp"
#include "trainer/runtime/op_profile.hpp"
#include "trainer/runtime/phase_peaks.hpp"
#include "trainer/runtime/phase_profile.hpp"
#include "trainer/runtime/step_stats.hpp"
#include "trainer/test_faults.hpp"
#include "trainer/test_mutants.hpp"
#include "trainer/workload/run_context.hpp"
#include "trainer/workload/wam/data/clip_loader.hpp"
#include "trainer/workload/wam/data/device_batch.hpp"
#include "trainer/workload/wam/wam_config.hpp"
#include "trainer/workload/wam/wam_train_loop.hpp"
#include "trainer/workload/wam/wam_workload.hpp"

#include <torch/torch.h>
#include <torch/version.h>

#include <chrono>
#include <cmath>

namespace sg::trainer {
namespace {

using Clock = std::chrono::steady_clock;

float eval_loss(WamWorkload& wam, const WamConfig& cfg, int64_t micro_batch, int64_t batches,
                c10::Device device, bool fast_input) {
  torch::NoGradGuard no_grad;
  SyntheticClips eval_data(cfg, kEvalSeed);
  LoaderOptions lo;
  lo.batch_size = micro_batch;
  lo.workers = 0;
  lo.collate_uint8 = fast_input;
  lo.first_sample = kEvalFirstSample;
  ClipLoader loader(eval_data, lo);
  at::Tensor total = at::zeros({}, at::kFloat);
  for (int64_t i = 0; i < batches; ++i) {
    total = total + wam.loss(to_device(loader.next(), device, fast_input), kEvalSeed).to(at::kCPU);
  }
  return (total / static_cast<double>(batches)).item<float>();
}

// A wam run's objects once built, by reference (they live in run_wam_training): the step
// loop and the report use the names the loop has always used.
struct WamRun : RunContext {
  const WamConfig& cfg;
  WamWorkload& wam;
  const std::vector<std::pair<std::string, at::Tensor>>& named;
  std::vector<at::Tensor>& params;
  Communicator* comm;
  ShardedAdamW& optim;
  GradientReducer& reducer;
  ClipLoader& loader;
  StepStats& stats;
  OpProfile& op_profile;
  PhaseProfile& profile;
  PhasePeaks& phase_peaks;
  uint64_t seed;
  uint64_t noise_seed;
  int64_t micro;
  int64_t accum;
  int64_t samples_per_step;
  int64_t first_steady_step;
  // A step's loss and gradient norm reach the host at once, or one step later
  // (ASYNC_STEP_STATS); its record is written then, so the records of a failed run hold only
  // steps whose values were read. A step's time is known when it ends.
  std::vector<double> step_seconds;

  void record(const std::vector<StepValues>& values);
  // The steps, then the phase and op profiles. Throws what a step throws, after recording
  // the steps that ended.
  void train();
  // Evaluation, digests, throughput, memory and extras into r; sets r.status "ok".
  void finish();
};

}  // namespace

void run_wam_training(const RunOptions& opt, const Switches& sw, const Runtime& rt, RunResult& r) {
  // ---- configuration ----
  const WamConfig& cfg = wam_config(opt.size);
  const int64_t micro = opt.micro_batch > 0 ? opt.micro_batch : cfg.default_micro_batch;
  const int64_t accum = opt.grad_accum;
  if (opt.steps < 1 || accum < 1) throw BadInputError("--steps and --grad-accum must be >= 1");
  const TestFaults faults = TestFaults::from_environment();
  const TestMutants& mutants = install_test_mutants(sw);  // all off unless SPEEDGATE_TEST_MUTANTS
  start_result(opt, sw, rt, micro, r);
  const uint64_t seed = static_cast<uint64_t>(opt.seed);
  const int64_t samples_per_step = micro * accum * rt.world_size;
  r.model_flops_per_step = model_flops_per_sample(cfg) * static_cast<double>(samples_per_step);
  OpProfile op_profile(rt.device,
                       /*writer=*/rt.rank == 0);  // SPEEDGATE_PROFILE_OPS: checked before any work

  // ---- build: frozen encoders, backbone, optimizer ----
  const auto build_start = Clock::now();
  WamWorkload wam(cfg, sw, rt.device, mix_seed(seed, 0x6d6f64656c));
  const auto named = wam.named_trainable();
  perturb_parameters(named, opt.perturb, seed);
  std::vector<at::Tensor> params;
  for (const auto& np : named) params.push_back(np.second);
  Communicator* comm = rt.comm.get();  // null at world size 1: averaging and sharding are no-ops
  const auto adamw =
      mutants.adamw(torch::optim::AdamWOptions(kLearningRate).weight_decay(kWeightDecay));
  ShardedAdamW optim(params, adamw, comm, sw.zero1);
  GradientReducer reducer(params, comm, sw.bucket_mb << 20, sw.overlap_comm);

  // ---- data: micro-step k's global batch is samples k*W*B .. (k+1)*W*B - 1, split in rank
  // order, so W ranks x B see exactly the samples of 1 rank x W*B ----
  SyntheticClips data(cfg, seed);
  LoaderOptions lo;
  lo.batch_size = micro;
  lo.workers = sw.data_workers;
  lo.collate_uint8 = sw.fast_input;
  lo.pin_memory = sw.pin_memory;
  lo.first_sample = int64_t{rt.rank} * micro;
  lo.batch_stride = micro * rt.world_size;
  ClipLoader loader(data, lo);
  const uint64_t noise_seed = mix_seed(seed, 0x6e6f697365);

  if (opt.perturb > 0) r.extra["perturb"] = opt.perturb;
  r.extra["build_seconds"] = std::chrono::duration<double>(Clock::now() - build_start).count();

  // ---- train ----
  PhaseProfile& profile = PhaseProfile::instance();
  const int64_t first_steady_step = opt.steps > opt.warmup_steps ? opt.warmup_steps : 0;
  PhasePeaks& phase_peaks = PhasePeaks::instance();
  phase_peaks.reset(rt.device);
  if (!opt.heartbeat_path.empty()) write_heartbeat(opt.heartbeat_path, 0);
  StepStats stats(rt.device, sw.async_step_stats);
  WamRun run{{opt, sw, rt, r, faults},
             cfg,
             wam,
             named,
             params,
             comm,
             optim,
             reducer,
             loader,
             stats,
             op_profile,
             profile,
             phase_peaks,
             seed,
             noise_seed,
             micro,
             accum,
             samples_per_step,
             first_steady_step,
             /*step_seconds=*/{}};
  run.train();
  run.finish();
}

namespace {

void WamRun::record(const std::vector<StepValues>& values) {
  for (const auto& v : values) {
    const float loss_value = global_mean(comm, v.loss_sum / static_cast<float>(accum));
    const auto s = static_cast<size_t>(v.step);
    r.step_records.push_back(
        {v.step, loss_value, v.grad_norm, s < step_seconds.size() ? step_seconds[s] : 0.0});
    if (!std::isfinite(loss_value) || !std::isfinite(v.grad_norm)) {
      throw NonFiniteError("non-finite loss or gradient norm at step " + std::to_string(v.step));
    }
  }
}

void WamRun::train() {
  const TestMutants& mutants = test_mutants();  // installed by run_wam_training
  try {
    for (int64_t step = 0; step < opt.steps; ++step) {
      // Steady-state time starts with the device idle: what an earlier step left queued
      // (ASYNC_STEP_STATS lets the host run ahead) is not counted.
      if (step == first_steady_step) {
        record(stats.flush());
        op_profile.start();
      }
      const auto t0 = Clock::now();
      profile.set_recording(step >= first_steady_step);
      // The same on every rank (no training op draws from it; per-sample noise is seeded by sample
      // id).
      torch::manual_seed(mix_seed(mix_seed(seed, 0), static_cast<uint64_t>(step)));
      if (faults.rank_crash && step == 1 && rt.rank == 1) std::abort();
      for (auto& p : params) p.mutable_grad() = at::Tensor();
      stats.begin_step(step);
      for (int64_t g = 0; g < accum; ++g) {
        const DeviceBatch batch = [&] {
          ScopedPhase phase("data", rt.device);
          return to_device(loader.next(), rt.device, sw.fast_input);
        }();
        at::Tensor loss = wam.loss(batch, noise_seed);
        if (faults.nan_loss && step == 1) loss = loss * std::nan("");
        if (faults.oom && step == 1)
          throw std::runtime_error("CUDA out of memory (injected by SPEEDGATE_TEST_FAULT=oom)");
        stats.add_loss(loss);
        // Average the micro-batches: loss / G before backward (the test fault sums them).
        ScopedPhase phase("backward", rt.device);
        reducer.begin_backward(/*last=*/g + 1 == accum);
        (faults.grad_accum_sum ? loss : loss / static_cast<double>(accum)).backward();
      }
      reducer.finish();  // gradients averaged over ranks
      mutants.round_gradients(params);
      {
        ScopedPhase phase("clip", rt.device);
        stats.set_grad_norm(clip_grad_norm(params, mutants.max_grad_norm(kMaxGradNorm)));
      }
      record(stats.ready());
      {
        ScopedPhase phase("optimizer", rt.device);
        const auto before = mutants.before_update(params, step);
        optim.step();
        mutants.after_update(params, before, step);
      }
      stats.end_step();
      if (step + 1 == opt.steps) record(stats.flush());  // the last step's time includes its wait
      step_seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      if (!r.step_records.empty() && r.step_records.back().step == step)
        r.step_records.back().seconds = step_seconds.back();
      if (!opt.heartbeat_path.empty()) write_heartbeat(opt.heartbeat_path, step + 1);
    }
  } catch (const NonFiniteError&) {
    throw;
  } catch (...) {
    // A step failed (out of memory, a crash): the steps that ended before it are on the
    // device (ASYNC_STEP_STATS holds the last one), so they are recorded as without the
    // switch, and a non-finite one among them, which came first, is what is reported. Not
    // in a distributed run: the loss average would wait on ranks that may be gone.
    if (comm == nullptr) {
      std::vector<StepValues> ended;
      try {
        ended = stats.flush();
      } catch (...) {  // NOLINT(bugprone-empty-catch): the device itself may be what failed
      }
      record(ended);
    }
    throw;
  }
  profile.set_recording(false);
  if (profile.enabled()) r.extra["phase_seconds"] = profile.to_json();
  op_profile.finish(opt.steps - first_steady_step);
}

void WamRun::finish() {
  // ---- evaluate ----
  if (opt.eval_batches > 0) {
    r.eval_loss = eval_loss(wam, cfg, micro, opt.eval_batches, rt.device, sw.fast_input);
    r.has_eval = true;
  }

  // ---- report: digests, throughput, memory ----
  r.param_digest = digest_tensors(named);
  r.optimizer_digest = optim.state_digest(named);
  r.zero_stage = optim.zero_stage();
  r.rank_param_digests = gather_to_root(comm, r.param_digest);
  const int64_t warmup = first_steady_step;
  record_steady_throughput(opt, warmup, samples_per_step, r);
  r.tokens_per_s = r.samples_per_s * static_cast<double>(cfg.tokens_per_sample());

  const auto peaks = phase_peaks.overall(rt.device);
  r.peak_allocated = gather_int_to_root(comm, peaks.allocated);
  r.peak_reserved = gather_int_to_root(comm, peaks.reserved);
  for (const auto& [phase, bytes] : phase_peaks.allocated_by_phase()) {
    const auto per_rank = gather_int_to_root(comm, bytes);
    r.phase_peak_allocated[phase] =
        per_rank.empty() ? 0 : *std::max_element(per_rank.begin(), per_rank.end());
  }
  int64_t frozen = wam.frozen_device_bytes();
  if (!rt.device.is_cuda() && wam.text().offload() != nullptr)
    frozen += wam.text().offload()->host_bytes();
  r.breakdown = memory_breakdown(params, optim.local_state_bytes(), frozen, peaks.allocated);

  if (const auto* cache = wam.text().cache()) {
    r.extra["text_cache"] = {{"hits", cache->hits},
                             {"misses", cache->misses},
                             {"evictions", cache->evictions},
                             {"entries", cache->size()}};
  }
  if (const auto* off = wam.text().offload())
    r.extra["text_encoder_offload"] = {{"loads", off->loads}};
  if (comm != nullptr) {
    r.extra["gradient_buckets"] = {{"buckets", reducer.plan().buckets.size()},
                                   {"started_in_backward", reducer.started_in_backward()}};
  }
  if (!faults.name().empty()) r.extra["test_fault"] = faults.name();
  r.status = "ok";
}

}  // namespace

}  // namespace sg::trainer
