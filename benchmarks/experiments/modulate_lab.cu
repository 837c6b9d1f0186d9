// Where modulate's forward (LayerNorm inside, ATen's order) spends its time: the project's
// kernel (adaln_layer_norm_kernels.cuh), dividing or with equal-count weights, with 128, 64
// or 32 threads playing a row's 128 ATen threads (each checked bitwise against ATen's own
// layout), next to ablations (no statistics; statistics alone) at wam `base` shapes, x bf16
// [B, 1280, 1536] -> float32, bare launches timed with CUDA events, as fractions of the measured
// device-to-device copy rate. An experiment, not a test: results and conclusions go to
// benchmarks/results/gpu-notes.md. Built as speedgate-modulate-lab in CUDA builds, or alone:
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. -I<torch>/include benchmarks/experiments/modulate_lab.cu
//   speedgate-modulate-lab [micro-batch ...]   (default: 32 8)
#include "kernels/adaln/adaln_layer_norm_kernels.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace lab {

using namespace sg::kernels::cuda;
using namespace sg::kernels::cuda::modulate_ln;
using bf16 = c10::BFloat16;

#define CHECK(call)                                                                              \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

constexpr int kC = 1536, kSeq = 1280, kCached = 3;  // 384 vectors: 3 per thread

// ATen's row layout played by kRowLanes threads a row (vectors of ATen thread a = t + j *
// kRowLanes: a, a + 128, ...) with the modulation but no statistics (mean 0, rstd 1): what
// the layout, the traffic and the modulation vectors' loads cost.
template <int kRowLanes>
__global__ void layout_modulate(const bf16* __restrict__ x, const float* __restrict__ scale,
                                const float* __restrict__ shift, float* __restrict__ out,
                                int64_t rows) {
  using L = lno::RowLayout<kRowLanes>;
  const RowSlot s = row_slot<kRowLanes>(rows);
  if (!s.valid) return;
  const float* sc = scale + s.row / kSeq * kC;
  const float* sh = shift + s.row / kSeq * kC;
  Pack<bf16, kVec> c[L::kPlays * kCached];
#pragma unroll
  for (int j = 0; j < L::kPlays * kCached; ++j)
    c[j] = load<kVec>(x + s.row * kC, (s.t + j * kRowLanes) * kVec);
#pragma unroll
  for (int j = 0; j < L::kPlays * kCached; ++j) {
    const int i = s.t + j * kRowLanes;
    float v[kVec];
    widen(c[j], v);
    const auto a = load<kVec>(sc, i * kVec), b = load<kVec>(sh, i * kVec);
    Pack<float, kVec> r;
#pragma unroll
    for (int e = 0; e < kVec; ++e) r.v[e] = fm::modulate_forward(v[e], a.v[e], b.v[e]);
    store<kVec>(out + s.row * kC, i * kVec, r);
  }
}

// The statistics alone: x read once, Welford in ATen's order, mean and rstd written; the
// combines dividing (welford_combine) or with the equal-count weights.
template <bool kEqual, int kRowLanes>
__global__ void stats_only(const bf16* __restrict__ x, float* __restrict__ mean_out,
                           float* __restrict__ rstd_out, int64_t rows, EqualWeights equal) {
  using L = lno::RowLayout<kRowLanes>;
  __shared__ RowSlots<kRowLanes> slots;
  const RowSlot s = row_slot<kRowLanes>(rows);
  Pack<bf16, kVec> c[L::kPlays][kCached];
  fm::WelfordLN w[L::kPlays];
#pragma unroll
  for (int j = 0; j < L::kPlays; ++j) w[j] = fm::WelfordLN{0.0f, 0.0f, 0.0f};
  if (s.valid) {
#pragma unroll
    for (int j = 0; j < L::kPlays; ++j)
#pragma unroll
      for (int k = 0; k < kCached; ++k)
        c[j][k] = load<kVec>(x + s.row * kC, (L::aten_thread(s.t, j) + k * kRowThreads) * kVec);
#pragma unroll
    for (int k = 0; k < kCached; ++k)
#pragma unroll
      for (int j = 0; j < L::kPlays; ++j) {
        float v[kVec];
        widen(c[j][k], v);
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          w[j] = fm::welford_push(w[j], v[e], kReciprocal[k * kVec + e]);
      }
  }
  const auto stats = lno::row_stats<kRowLanes>(
      w, kC, slots.of(s.group), s.t, [&](int level, fm::WelfordLN b, fm::WelfordLN a) {
        return kEqual
                   ? fm::welford_combine_equal(b, a, equal_count(kCached, level), equal.half[level])
                   : fm::welford_combine(b, a);
      });
  if (s.valid && s.t == 0) {
    mean_out[s.row] = stats.mean;
    rstd_out[s.row] = rsqrtf(fm::fadd(stats.sigma2, 1e-6f));
  }
}

float median_us(const std::function<void()>& launch) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 5; ++i) launch();
  std::vector<float> ms;
  for (int i = 0; i < 31; ++i) {
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float m = 0;
    CHECK(cudaEventElapsedTime(&m, a, b));
    ms.push_back(m);
  }
  CHECK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2] * 1000.0f;
}

void run(int batch) {
  const int64_t rows = int64_t{batch} * kSeq, n = rows * kC;
  bf16* x;
  float *scale, *shift, *out, *ref, *mean, *rstd;
  CHECK(cudaMalloc(&x, n * sizeof(bf16)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  CHECK(cudaMalloc(&ref, n * sizeof(float)));
  CHECK(cudaMalloc(&scale, batch * kC * sizeof(float)));
  CHECK(cudaMalloc(&shift, batch * kC * sizeof(float)));
  CHECK(cudaMalloc(&mean, rows * sizeof(float)));
  CHECK(cudaMalloc(&rstd, rows * sizeof(float)));
  {
    std::vector<bf16> hx(n);
    uint32_t s = 12345;
    auto next = [&] {
      s = s * 1664525u + 1013904223u;
      return (static_cast<float>(s >> 8) / 16777216.0f - 0.5f) * 6.0f + 1.0f;
    };
    for (auto& v : hx) v = bf16(next());
    std::vector<float> hm(batch * kC);
    for (auto& v : hm) v = next() * 0.1f;
    CHECK(cudaMemcpy(x, hx.data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(scale, hm.data(), hm.size() * sizeof(float), cudaMemcpyHostToDevice));
    for (auto& v : hm) v = next() * 0.1f;
    CHECK(cudaMemcpy(shift, hm.data(), hm.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  const double mix = n * 6.0;  // bytes: x read, out written
  const float copy_us = median_us(
      [&] { CHECK(cudaMemcpyAsync(ref, out, n * sizeof(float), cudaMemcpyDeviceToDevice)); });
  const double copy_rate = 2.0 * n * sizeof(float) / (copy_us * 1e-6);
  std::printf(
      "\n## micro-batch %d (%lld rows x %d); copy %.0f GB/s\n\n| kernel | threads | us | of copy "
      "|\n|---|---|---|---|\n",
      batch, static_cast<long long>(rows), kC, copy_rate / 1e9);
  auto row = [&](const std::string& name, int threads, double bytes, float us) {
    std::printf("| %s | %d | %.1f | %.0f %% |\n", name.c_str(), threads, us,
                100.0 * bytes / (us * 1e-6) / copy_rate);
  };
  const EqualWeights equal = equal_weights(kCached);
  std::vector<float> a(n), b(n);
  // The reference bits: 128 threads a row (ATen's own layout), dividing combines.
  CHECK(cudaMemset(ref, 0xff, n * sizeof(float)));
  modulate_ln_fwd_kernel<bf16, kCached, false, 128><<<static_cast<unsigned>(rows), 128>>>(
      x, scale, shift, ref, mean, rstd, rows, kC, kSeq, kC, kC, 1e-6f, equal);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(b.data(), ref, n * sizeof(float), cudaMemcpyDeviceToHost));
  auto by_layout = [&](auto lanes) {
    constexpr int kLanes = decltype(lanes)::value;
    for (int threads : {128, 256, 512}) {
      const unsigned grid =
          static_cast<unsigned>((rows + threads / kLanes - 1) / (threads / kLanes));
      const std::string at = ", " + std::to_string(kLanes) + " threads a row";
      row("layout_modulate (no statistics)" + at, threads, mix, median_us([&] {
            layout_modulate<kLanes><<<grid, threads>>>(x, scale, shift, out, rows);
          }));
      row("stats_only, dividing (reads x only)" + at, threads, n * 2.0, median_us([&] {
            stats_only<false, kLanes><<<grid, threads>>>(x, mean, rstd, rows, equal);
          }));
      row("stats_only, equal counts (reads x only)" + at, threads, n * 2.0, median_us([&] {
            stats_only<true, kLanes><<<grid, threads>>>(x, mean, rstd, rows, equal);
          }));
      auto kernel = [&](auto kernel_equal, auto min_blocks) {
        constexpr bool kEqual = decltype(kernel_equal)::value;
        constexpr int kMinBlocks = decltype(min_blocks)::value;
        CHECK(cudaMemset(out, 0xff, n * sizeof(float)));
        const float us = median_us([&] {
          modulate_ln_fwd_kernel<bf16, kCached, kEqual, kLanes, kMinBlocks><<<grid, threads>>>(
              x, scale, shift, out, mean, rstd, rows, kC, kSeq, kC, kC, 1e-6f, equal);
        });
        CHECK(cudaMemcpy(a.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
        const bool same = std::memcmp(a.data(), b.data(), n * sizeof(float)) == 0;
        row(std::string("modulate_ln_fwd_kernel, ") + (kEqual ? "equal counts" : "dividing") + at +
                (kMinBlocks > 1 ? ", <= 64 registers" : "") +
                (same ? " (bitwise ATen's layout)" : " (DIFFERS)"),
            threads, mix, us);
      };
      kernel(std::false_type{}, std::integral_constant<int, 1>{});
      kernel(std::true_type{}, std::integral_constant<int, 1>{});
      if constexpr (kLanes == 32) kernel(std::true_type{}, std::integral_constant<int, 2>{});
    }
  };
  by_layout(std::integral_constant<int, 128>{});
  by_layout(std::integral_constant<int, 64>{});
  by_layout(std::integral_constant<int, 32>{});
  for (void* p : {static_cast<void*>(x), static_cast<void*>(out), static_cast<void*>(ref),
                  static_cast<void*>(scale), static_cast<void*>(shift), static_cast<void*>(mean),
                  static_cast<void*>(rstd)})
    CHECK(cudaFree(p));
}

}  // namespace lab

int main(int argc, char** argv) {
  std::vector<int> batches;
  for (int i = 1; i < argc; ++i) batches.push_back(std::atoi(argv[i]));
  if (batches.empty()) batches = {32, 8};
  for (int b : batches) {
    if (b <= 0) {
      std::fprintf(stderr, "speedgate-modulate-lab: a micro-batch must be a positive integer\n");
      return 2;
    }
    lab::run(b);
  }
  return 0;
}
