// Where modulate's forward (LayerNorm inside, ATen's order) loses bandwidth: times the
// project's kernel (adaln_layer_norm_kernels.cuh) next to ablations and candidate layouts at
// wam `base` shapes, x bf16 [B, 1280, 1536] -> float32, as fractions of the measured
// device-to-device copy rate. An experiment, not a test: results and conclusions go to
// benchmarks/results/gpu-notes.md. Standalone (CUDA + c10 headers, no ATen library):
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. -I<torch>/include benchmarks/experiments/modulate_lab.cu -o modulate_lab
//   ./modulate_lab [micro-batch ...]
#include "kernels/cuda/adaln_layer_norm_kernels.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace lab {

using namespace sg::kernels::cuda;
using namespace sg::kernels::cuda::modulate_ln;
using bf16 = c10::BFloat16;

#define CHECK(call)                                                                       \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

constexpr int kC = 1536, kSeq = 1280, kCached = 3;  // 384 vectors: 3 per thread

// Ceiling for this traffic mix (read 2 bytes, write 4 per element) with the widest accesses:
// 8 bf16 in one 16-byte load, 8 floats out in two 16-byte stores, grid-stride.
__global__ void widen_copy(const bf16* __restrict__ x, float* __restrict__ out, int64_t n8) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n8; i += int64_t{gridDim.x} * blockDim.x) {
    const auto p = load<8>(x, i * 8);
    Pack<float, 4> a, b;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      a.v[e] = static_cast<float>(p.v[e]);
      b.v[e] = static_cast<float>(p.v[e + 4]);
    }
    store<4>(out, i * 8, a);
    store<4>(out, i * 8 + 4, b);
  }
}

// ATen's row layout (128 threads a row, vectors t, t + 128, ...) with the modulation but no
// statistics (mean 0, rstd 1): what the layout and the modulation vectors' loads cost.
__global__ void layout_modulate(const bf16* __restrict__ x, const float* __restrict__ scale,
                                const float* __restrict__ shift, float* __restrict__ out, int64_t rows) {
  const int t = threadIdx.x % kRowThreads;
  const int64_t row = blockIdx.x * int64_t{blockDim.x / kRowThreads} + threadIdx.x / kRowThreads;
  if (row >= rows) return;
  const float* sc = scale + row / kSeq * kC;
  const float* sh = shift + row / kSeq * kC;
  Pack<bf16, kVec> c[kCached];
#pragma unroll
  for (int k = 0; k < kCached; ++k) c[k] = load<kVec>(x + row * kC, (t + k * kRowThreads) * kVec);
#pragma unroll
  for (int k = 0; k < kCached; ++k) {
    const int i = t + k * kRowThreads;
    float v[kVec];
    widen(c[k], v);
    const auto s = load<kVec>(sc, i * kVec), h = load<kVec>(sh, i * kVec);
    Pack<float, kVec> r;
#pragma unroll
    for (int e = 0; e < kVec; ++e) r.v[e] = fm::modulate_forward(v[e], s.v[e], h.v[e]);
    store<kVec>(out + row * kC, i * kVec, r);
  }
}

// The statistics alone: x read once, Welford in ATen's order, mean and rstd written.
__global__ void stats_only(const bf16* __restrict__ x, float* __restrict__ mean_out, float* __restrict__ rstd_out,
                           int64_t rows) {
  __shared__ float slots[kMaxGroupsPerBlock][1][3 * kRowWarps];
  const RowGroup<1> g(rows);
  Pack<bf16, kVec> c[kCached];
  fm::WelfordLN w[1] = {{0.0f, 0.0f, 0.0f}};
#pragma unroll
  for (int k = 0; k < kCached; ++k)
    if (g.valid[0]) c[k] = load<kVec>(x + g.row_or_0[0] * kC, (g.t + k * kRowThreads) * kVec);
#pragma unroll
  for (int k = 0; k < kCached; ++k)
    if (g.valid[0]) {
      float v[kVec];
      widen(c[k], v);
#pragma unroll
      for (int e = 0; e < kVec; ++e) w[0] = fm::welford_push(w[0], v[e], kReciprocal[k * kVec + e]);
    }
  lno::row_stats<1>(w, kC, slots[g.group], g.t);
  if (g.valid[0] && g.t == 0) {
    mean_out[g.row_or_0[0]] = w[0].mean;
    rstd_out[g.row_or_0[0]] = rsqrtf(fm::fadd(w[0].sigma2, 1e-6f));
  }
}

// Candidate: persistent row groups, each looping over rows a grid apart with the next row's
// x loaded into a second register set before the current row's statistics (loads in flight
// through the reduction and the writes). Same per-row order, so the same bits.
__global__ void __launch_bounds__(kMaxThreads) prefetch_rows(const bf16* __restrict__ x, const float* __restrict__ scale,
                                                              const float* __restrict__ shift, float* __restrict__ out,
                                                              float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                                              int64_t rows, float eps) {
  __shared__ float slots[kMaxGroupsPerBlock][1][3 * kRowWarps];
  const int groups = blockDim.x / kRowThreads, group = threadIdx.x / kRowThreads, t = threadIdx.x % kRowThreads;
  const int64_t stride = int64_t{gridDim.x} * groups;
  Pack<bf16, kVec> cur[kCached], nxt[kCached];
  auto fetch = [&](int64_t row, Pack<bf16, kVec>(&c)[kCached]) {
    if (row >= rows) return;
#pragma unroll
    for (int k = 0; k < kCached; ++k) c[k] = load<kVec>(x + row * kC, (t + k * kRowThreads) * kVec);
  };
  fetch(blockIdx.x * int64_t{groups} + group, cur);
  for (int64_t base = blockIdx.x * int64_t{groups}; base < rows; base += stride) {  // uniform per block
    const int64_t row = base + group;
    fetch(row + stride, nxt);
    fm::WelfordLN w[1] = {{0.0f, 0.0f, 0.0f}};
    if (row < rows) {
#pragma unroll
      for (int k = 0; k < kCached; ++k) {
        float v[kVec];
        widen(cur[k], v);
#pragma unroll
        for (int e = 0; e < kVec; ++e) w[0] = fm::welford_push(w[0], v[e], kReciprocal[k * kVec + e]);
      }
    }
    lno::row_stats<1>(w, kC, slots[group], t);
    if (row < rows) {
      const float mean = w[0].mean, rstd = rsqrtf(fm::fadd(w[0].sigma2, eps));
      const float* sc = scale + row / kSeq * kC;
      const float* sh = shift + row / kSeq * kC;
#pragma unroll
      for (int k = 0; k < kCached; ++k) {
        const int i = t + k * kRowThreads;
        float v[kVec];
        widen(cur[k], v);
        const auto s = load<kVec>(sc, i * kVec), h = load<kVec>(sh, i * kVec);
        Pack<float, kVec> r;
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          r.v[e] = fm::modulate_forward(fm::layer_norm_normalize(v[e], mean, rstd), s.v[e], h.v[e]);
        store<kVec>(out + row * kC, i * kVec, r);
      }
      if (t == 0) {
        mean_out[row] = mean;
        rstd_out[row] = rstd;
      }
    }
#pragma unroll
    for (int k = 0; k < kCached; ++k) cur[k] = nxt[k];
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

template <typename K>
int resident_blocks(K kernel, int threads) {
  int per_sm = 0, sms = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  return per_sm * sms;
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
  const float copy_us = median_us([&] { CHECK(cudaMemcpyAsync(ref, out, n * sizeof(float), cudaMemcpyDeviceToDevice)); });
  const double copy_rate = 2.0 * n * sizeof(float) / (copy_us * 1e-6);
  std::printf("\n## micro-batch %d (%lld rows x %d); copy %.0f GB/s\n\n| kernel | threads | us | of copy |\n|---|---|---|---|\n",
              batch, static_cast<long long>(rows), kC, copy_rate / 1e9);
  auto row = [&](const char* name, int threads, double bytes, float us) {
    std::printf("| %s | %d | %.1f | %.0f %% |\n", name, threads, us, 100.0 * bytes / (us * 1e-6) / copy_rate);
  };
  const int sms_blocks = resident_blocks(widen_copy, 256);
  row("widen_copy (mix ceiling)", 256, mix, median_us([&] { widen_copy<<<sms_blocks, 256>>>(x, out, n / 8); }));
  for (int threads : {128, 256, 512}) {
    const int per_block = threads / kRowThreads;
    const unsigned grid = static_cast<unsigned>((rows + per_block - 1) / per_block);
    row("layout_modulate (no stats)", threads, mix,
        median_us([&] { layout_modulate<<<grid, threads>>>(x, scale, shift, out, rows); }));
    row("stats_only (reads x only)", threads, n * 2.0,
        median_us([&] { stats_only<<<grid, threads>>>(x, mean, rstd, rows); }));
    row("project kernel, 1 row/group", threads, mix, median_us([&] {
          modulate_ln_fwd_kernel<bf16, kCached, 1>
              <<<grid, threads>>>(x, scale, shift, ref, mean, rstd, rows, kC, kSeq, kC, kC, 1e-6f);
        }));
    const unsigned grid2 = static_cast<unsigned>((rows + 2 * per_block - 1) / (2 * per_block));
    row("project kernel, 2 rows/group", threads, mix, median_us([&] {
          modulate_ln_fwd_kernel<bf16, kCached, 2>
              <<<grid2, threads>>>(x, scale, shift, out, mean, rstd, rows, kC, kSeq, kC, kC, 1e-6f);
        }));
    const int resident = resident_blocks(prefetch_rows, threads);
    for (int factor : {1, 2}) {
      const unsigned pgrid = static_cast<unsigned>(std::min<int64_t>(int64_t{resident} * factor, grid));
      CHECK(cudaMemset(out, 0xff, n * sizeof(float)));
      const float us = median_us([&] { prefetch_rows<<<pgrid, threads>>>(x, scale, shift, out, mean, rstd, rows, 1e-6f); });
      std::vector<float> a(n), b(n);
      CHECK(cudaMemcpy(a.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(b.data(), ref, n * sizeof(float), cudaMemcpyDeviceToHost));
      const bool same = std::memcmp(a.data(), b.data(), n * sizeof(float)) == 0;
      const std::string name = "prefetch_rows, grid " + std::to_string(factor) + "x resident (" +
                               std::to_string(pgrid) + ")" + (same ? ", bitwise" : ", DIFFERS");
      row(name.c_str(), threads, mix, us);
    }
  }
  for (void* p : {static_cast<void*>(x), static_cast<void*>(out), static_cast<void*>(ref), static_cast<void*>(scale),
                  static_cast<void*>(shift), static_cast<void*>(mean), static_cast<void*>(rstd)})
    CHECK(cudaFree(p));
}

}  // namespace lab

int main(int argc, char** argv) {
  std::vector<int> batches;
  for (int i = 1; i < argc; ++i) batches.push_back(std::atoi(argv[i]));
  if (batches.empty()) batches = {32, 8};
  for (int b : batches) {
    if (b <= 0) {
      std::fprintf(stderr, "modulate_lab: micro-batch must be a positive integer, got '%s'\n", argv[1]);
      return 2;
    }
    lab::run(b);
  }
  return 0;
}
