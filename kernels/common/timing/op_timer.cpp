#include "kernels/common/timing/op_timer.hpp"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>

#if SPEEDGATE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>

namespace sg::kernels {
namespace {

#if SPEEDGATE_WITH_CUDA
// GPU clock cycles that outlast twice the longest host dispatch of fn (autograd, allocator,
// launches: the host time between calling fn and its last launch) seen over the warm-up
// runs, which this runs; the first run, which pays one-time set-up (module loading,
// library handles, allocations), counts only when it is the only one. At least 20 us.
int64_t dispatch_cover_cycles(int sets, const TimerOptions& options,
                              const std::function<void(int)>& fn) {
  double longest_s = 0;
  for (int i = 0; i < options.warmup; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn(i % sets);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i > 0 || options.warmup == 1) longest_s = std::max(longest_s, s);
    C10_CUDA_CHECK(cudaDeviceSynchronize());
  }
  int khz = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, at::cuda::current_device()));
  return static_cast<int64_t>(std::max(2.0 * longest_s, 20e-6) * khz * 1e3);
}
#endif

// Median milliseconds of fn(i) over options.repeats, input set i rotated. On a CUDA device
// the time is the GPU's, from the first to the last kernel fn queues: a spin kernel queued
// before the start event keeps the GPU busy while the host dispatches fn (the host runs
// ahead in training, so its dispatch time is not the op's).
double median_ms(c10::Device device, int sets, const TimerOptions& options,
                 const std::function<void(int)>& fn) {
  std::vector<double> ms;
#if SPEEDGATE_WITH_CUDA
  if (device.is_cuda()) {
    const c10::cuda::CUDAGuard guard(device);
    const int64_t cover = dispatch_cover_cycles(sets, options, fn);
    auto stream = at::cuda::getCurrentCUDAStream();
    cudaEvent_t start, stop;
    C10_CUDA_CHECK(cudaEventCreate(&start));
    C10_CUDA_CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < options.repeats; ++i) {
      at::cuda::sleep(cover);
      C10_CUDA_CHECK(cudaEventRecord(start, stream));
      fn(i % sets);
      C10_CUDA_CHECK(cudaEventRecord(stop, stream));
      C10_CUDA_CHECK(cudaEventSynchronize(stop));
      float t = 0;
      C10_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
      ms.push_back(t);
    }
    C10_CUDA_CHECK(cudaEventDestroy(start));
    C10_CUDA_CHECK(cudaEventDestroy(stop));
  }
#endif
  if (!device.is_cuda()) {
    for (int i = 0; i < options.warmup; ++i) fn(i % sets);
    for (int i = 0; i < options.repeats; ++i) {
      const auto start = std::chrono::steady_clock::now();
      fn(i % sets);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
  }
  if (ms.empty())
    throw std::runtime_error("cannot time on device " + device.str() + " in this build");
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

OpTiming time_op(const OpCase& op, const ParamValues* params, const TimerOptions& options) {
  const int sets = static_cast<int>(op.sets.size());
  const c10::Device device = op.sets.at(0).at(0).device();
  // Leaves and incoming grads per set, made before timing (the seeds come from a forward).
  std::vector<std::vector<at::Tensor>> leaves(sets), seeds(sets);
  for (int i = 0; i < sets; ++i) {
    for (const auto& t : op.sets[i]) leaves[i].push_back(t.detach().requires_grad_(true));
    at::NoGradGuard no_grad;
    for (const auto& o : op.run(op.sets[i], params)) seeds[i].push_back(at::randn_like(o));
  }
  OpTiming t;
  t.fwd_ms = median_ms(device, sets, options, [&](int i) {
    at::NoGradGuard no_grad;
    op.run(op.sets[i], params);
  });
  t.fwdbwd_ms = median_ms(device, sets, options, [&](int i) {
    auto outs = op.run(leaves[i], params);
    torch::autograd::grad(outs, leaves[i], seeds[i], /*retain_graph=*/false, /*create_graph=*/false,
                          /*allow_unused=*/true);
  });
  return t;
}

std::string params_text(const ParamValues& params) {
  std::string s;
  for (const auto& [k, v] : params) s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return s;
}

double device_copy_rate(const TimerOptions& options) {
#if SPEEDGATE_WITH_CUDA
  constexpr int kSets = 3;
  auto opts = at::TensorOptions().dtype(at::kByte).device(at::kCUDA);
  std::vector<at::Tensor> src, dst;
  for (int i = 0; i < kSets; ++i) {
    src.push_back(at::empty({int64_t{1} << 30}, opts));
    dst.push_back(at::empty({int64_t{1} << 30}, opts));
  }
  const double ms =
      median_ms(c10::Device(c10::kCUDA), kSets, options, [&](int i) { dst[i].copy_(src[i]); });
  return 2.0 * double(int64_t{1} << 30) / (ms * 1e-3);
#else
  (void)options;
  throw std::runtime_error("device_copy_rate needs a CUDA build");
#endif
}

}  // namespace sg::kernels
