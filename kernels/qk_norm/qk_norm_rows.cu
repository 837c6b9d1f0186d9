// QKNORM's forward as one pass per row: rms_norm_reference (and the 3-D RoPE rotation for
// the video q/k) with the row mean of squares summed in the order of ATen's CUDA mean over
// the last dim of a float32 [R, C] tensor (LibTorch 2.x, Reduce.cuh's ReduceOp with MeanOps,
// vt0 = input_vec_size = 4): for R >= 16 rows and 128 <= C <= 8160, C % 4 == 0,
// setReduceConfig picks blocks of 32 x 16 threads, one warp per row and no split across
// warps or blocks; lane l adds the 4-float vectors l, l + 32, ... into 4 accumulators (one
// per vector slot), folds them ((a0 + a1) + a2) + a3, the warp sums by shuffles down 16,
// 8, 4, 2, 1, and the sum is multiplied by factor = float(R) / float(R * C). Then, as the
// reference's next ATen kernels: + eps (float), rsqrtf, and the per-element
// normalisation of fused_math.hpp. Squaring x in registers gives the values ATen reads from
// its squares tensor, which is never materialised; a row of up to 1536 elements is read once
// (longer rows twice). Applies where rms_norm_rows_applies says (qk_norm_launchers.hpp).
#include "kernels/common/cuda/fused_math.hpp"
#include "kernels/common/cuda/vector_access.cuh"
#include "kernels/qk_norm/qk_norm_launchers.hpp"
#include "kernels/qk_norm/qk_norm_operands.hpp"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace sg::kernels::cuda {
namespace {

namespace fm = fused_math;
constexpr int kWarp = 32;
constexpr int kVec = 4;
// Per lane: rows of up to 32 * 12 * 4 = 1536 elements (wam base).
constexpr int kCachedVectors = 12;

// acc[e] += float(v[e])^2 for the lane's 4 accumulators (one per vector slot).
__device__ __forceinline__ void add_squares(float (&acc)[kVec], const float (&v)[kVec]) {
#pragma unroll
  for (int e = 0; e < kVec; ++e) acc[e] = fm::fadd(acc[e], fm::rms_square(v[e]));
}

// The accumulators warp 0 handed over (2 warps a row).
__device__ __forceinline__ void set_acc(float (&acc)[kVec], float4 a) {
  acc[0] = a.x;
  acc[1] = a.y;
  acc[2] = a.z;
  acc[3] = a.w;
}

// The row's r from the warp's accumulators: each lane folds its 4 ((a0 + a1) + a2) + a3, the
// warp sums by shuffles down 16 .. 1 (ATen's order) and broadcasts; then ATen's mean
// (* factor), + eps and rsqrt (rsqrtf). Every lane of the warp calls it.
__device__ __forceinline__ float warp_row_rsqrt(const float (&acc)[kVec], float factor, float eps) {
  float sum = fm::fadd(fm::fadd(fm::fadd(acc[0], acc[1]), acc[2]), acc[3]);
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset >>= 1)
    sum = fm::fadd(sum, __shfl_down_sync(0xffffffffu, sum, offset));
  sum = __shfl_sync(0xffffffffu, sum, 0);
  return rsqrtf(fm::fadd(fm::fmul(sum, factor), eps));
}

// Rotates the (x0, x1) pairs of vector i by its table row trow's entries: the lane's two
// pair_cs when same_pairs (see the kernel), else each pair's own (ch / 2) % half_head.
__device__ __forceinline__ void rotate_pairs(Pack<float, kVec>& res, int i,
                                             const double2* __restrict__ trow, int half_head,
                                             bool same_pairs, const double2 (&pair_cs)[2]) {
#pragma unroll
  for (int e = 0; e < kVec; e += 2) {
    const int ch = i * kVec + e;
    const double2 cs = same_pairs ? pair_cs[e / 2] : __ldg(&trow[(ch / 2) % half_head]);
    double r0, r1;
    fm::rope_forward(fm::to_double(res.v[e]), fm::to_double(res.v[e + 1]), cs.x, cs.y, r0, r1);
    res.v[e] = fm::from_double<float>(r0);
    res.v[e + 1] = fm::from_double<float>(r1);
  }
}

// Calls f(i, v) for a lane's vectors i = lane, lane + 32, ... < nv of row xr, read from
// memory (rows too long for the register cache), v widened to float.
template <typename T, typename F>
__device__ __forceinline__ void each_streamed(const T* __restrict__ xr, int lane, int nv, F&& f) {
  for (int i = lane; i < nv; i += kWarp) {
    float v[kVec];
    load_float<kVec>(xr, i * kVec, v);
    f(i, v);
  }
}

// kRowWarps warps a row: with 2 (rows of up to 1536 elements, kCached > 0), warp h of a row
// holds a lane's vectors k = 6h .. 6h + 5 (i = lane + 32k), so each warp loads, keeps and
// writes half the row; warp 0 adds its six vectors into the lane's 4 accumulators and hands
// them to warp 1 through shared memory, which adds its six in order: every accumulator sees
// ATen's sequence of additions, so the sum's bits are ATen's. Warp 1 reduces the warp and
// hands r back. Half the registers a thread and a shorter life a warp for the same traffic.
template <typename T, bool kRope, int kCached, int kRowWarps>
__global__ void __launch_bounds__(512)
    rms_norm_rows_kernel(const T* __restrict__ x, const float* __restrict__ w,
                         const double2* __restrict__ table, float* __restrict__ out,
                         float* __restrict__ r_out, int64_t rows, int c, int64_t seq, int half_head,
                         float factor, float eps) {
  static_assert(kRowWarps == 1 || (kRowWarps == 2 && kCached > 0 && kCached % 2 == 0),
                "2 warps a row: cached rows");
  constexpr int kPer = kCached > 0 ? kCached / kRowWarps : 1;  // vectors a lane of each warp holds
  constexpr int kMaxRows = 512 / (kWarp * kRowWarps);  // rows a block of <= 512 threads holds
  __shared__ float4 handoff[kRowWarps > 1 ? kMaxRows : 1][kWarp];
  __shared__ float r_shared[kRowWarps > 1 ? kMaxRows : 1];
  const int lane = threadIdx.x % kWarp;
  const int group = threadIdx.x / (kWarp * kRowWarps), h = threadIdx.x / kWarp % kRowWarps;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / (kWarp * kRowWarps)) + group;
  const bool valid = row < rows;
  if (kRowWarps == 1 && !valid)
    return;  // the whole warp (2 warps a row: the barriers need every thread)
  const T* xr = x + (valid ? row : 0) * c;
  const int nv = valid ? c / kVec : 0;
  Pack<T, kVec> cached[kPer];  // x's own type: half the registers for bf16
  auto vec = [&](int q) { return lane + (h * kPer + q) * kWarp; };  // the lane's q-th cached vector
  float acc[kVec] = {0.0f, 0.0f, 0.0f, 0.0f};
  // Calls f(i, v) for the lane's cached vectors i the row has, in order, v widened to float.
  auto each_cached = [&](auto&& f) {
#pragma unroll
    for (int q = 0; q < kPer; ++q)
      if (vec(q) < nv) {
        float v[kVec];
        widen(cached[q], v);
        f(vec(q), v);
      }
  };
  auto add_cached = [&] { each_cached([&](int, const float(&v)[kVec]) { add_squares(acc, v); }); };
  if constexpr (kCached > 0) {
#pragma unroll
    for (int q = 0; q < kPer; ++q)
      if (vec(q) < nv) cached[q] = load<kVec>(xr, vec(q) * kVec);
    if (h == 0) add_cached();
  } else {
    each_streamed(xr, lane, nv, [&](int, const float(&v)[kVec]) { add_squares(acc, v); });
  }
  if constexpr (kRowWarps > 1) {
    if (h == 0) handoff[group][lane] = make_float4(acc[0], acc[1], acc[2], acc[3]);
    __syncthreads();
    if (h == 1) {
      set_acc(acc, handoff[group][lane]);
      add_cached();
    }
  }
  float r = 0.0f;
  if (h == kRowWarps - 1) {
    r = warp_row_rsqrt(acc, factor, eps);
    if (lane == 0 && valid) r_out[row] = r;
  }
  if constexpr (kRowWarps > 1) {
    if (h == kRowWarps - 1 && lane == 0) r_shared[group] = r;
    __syncthreads();
    r = r_shared[group];
  }
  if (!valid) return;
  float* o = out + row * c;
  // A lane's vectors i = lane + 32k start 128 channels (64 pairs) apart: where the head's
  // half_head pairs divide 64, every k rotates by the same two table entries, read once.
  const bool same_pairs = kRope && 64 % half_head == 0;
  const double2* trow = kRope ? table + (row % seq) * half_head : nullptr;
  double2 pair_cs[2] = {};
  if (kRope && same_pairs) {
#pragma unroll
    for (int p = 0; p < 2; ++p) pair_cs[p] = __ldg(&trow[(2 * lane + p) % half_head]);
  }
  auto emit = [&](int i, const float(&v)[kVec]) {
    const auto wv = load<kVec>(w, i * kVec);
    Pack<float, kVec> res;
#pragma unroll
    for (int e = 0; e < kVec; ++e) res.v[e] = fm::rms_normalize<T>(v[e], r, wv.v[e]);
    if constexpr (kRope) rotate_pairs(res, i, trow, half_head, same_pairs, pair_cs);
    store<kVec>(o, i * kVec, res);
  };
  if constexpr (kCached > 0) {
    each_cached(emit);
  } else {
    each_streamed(xr, lane, nv, emit);
  }
}

}  // namespace

bool rms_norm_rows_applies(const at::Tensor& x, const at::Tensor& w) {
  if (!x.is_cuda() || x.dim() != 3 || !x.is_contiguous()) return false;
  if (x.scalar_type() != at::kFloat && x.scalar_type() != at::kBFloat16) return false;
  const int64_t rows = x.size(0) * x.size(1), c = x.size(2);
  // 16+ rows and C <= 8160 give ATen's one-warp-per-row configuration. Conservative: rows * C
  // floats within 32-bit byte offsets (beyond, ATen reduces on sub-iterators split along the
  // rows, the same order per row, but that path is not tested here).
  return rows >= 16 && c >= 128 && c <= 8160 && c % kVec == 0 &&
         rows * c * 4 <= std::numeric_limits<int32_t>::max() &&
         aligned_to(x, kVec * x.element_size()) && w.device() == x.device() &&
         w.scalar_type() == at::kFloat && w.dim() == 1 && w.size(0) == c && w.is_contiguous() &&
         aligned_to(w, 16);
}

std::pair<at::Tensor, at::Tensor> rms_norm_rows(const at::Tensor& x, const at::Tensor& w,
                                                const at::Tensor& table, int64_t heads, double eps,
                                                int64_t threads, int64_t row_warps) {
  TORCH_CHECK(rms_norm_rows_applies(x, w),
              "qk_norm: the row pass needs contiguous aligned [B, S, C] rows "
              "(16 or more, 128 <= C <= 8160, C % 4 == 0) and a float32 [C] weight");
  TORCH_CHECK(row_warps == 1 || row_warps == 2, "qk_norm: row_warps must be 1 or 2, got ",
              row_warps);
  TORCH_CHECK(threads > 0 && threads <= 512 && threads % (kWarp * row_warps) == 0,
              "qk_norm: threads (got ", threads,
              ") must be a multiple of 32 * row_warps = ", kWarp * row_warps, ", at most 512");
  const bool rope = table.defined();
  const int64_t rows = x.size(0) * x.size(1), c = x.size(2), seq = x.size(1);
  const int half_head = rope ? static_cast<int>(qk_norm::check_rope_table(table, x, heads)) : 1;
  const c10::cuda::CUDAGuard guard(x.device());
  auto sizes =
      rope ? std::vector<int64_t>{x.size(0), x.size(1), heads, c / heads} : x.sizes().vec();
  auto out = empty_output(sizes, x.options().dtype(at::kFloat));
  auto r = empty_output({x.size(0), x.size(1), 1}, x.options().dtype(at::kFloat));
  // ATen's MeanOps factor: float(num outputs) / numel, the int64 numel converted to float;
  // `+ eps` adds the scalar as float.
  const float factor = static_cast<float>(rows) / static_cast<float>(rows * c);
  auto stream = at::cuda::getCurrentCUDAStream();
  const double2* tab = rope ? reinterpret_cast<const double2*>(table.data_ptr<double>()) : nullptr;
  // Two warps a row only where the row is cached (else one: the same result either way).
  const bool cached_rows = c / kVec <= int64_t{kWarp} * kCachedVectors;
  const int64_t warps_a_row = cached_rows ? row_warps : 1;
  const int64_t per_block = threads / (kWarp * warps_a_row);
  const int64_t blocks = (rows + per_block - 1) / per_block;
  TORCH_CHECK(blocks < (int64_t{1} << 31), "qk_norm: too many rows");
  auto launch = [&](auto t, auto with_rope, auto cached, auto row_warps_c) {
    using T = decltype(t);
    rms_norm_rows_kernel<T, decltype(with_rope)::value, decltype(cached)::value,
                         decltype(row_warps_c)::value>
        <<<dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(threads)), 0, stream>>>(
            x.data_ptr<T>(), w.data_ptr<float>(), tab, out.data_ptr<float>(), r.data_ptr<float>(),
            rows, static_cast<int>(c), seq, half_head, factor, static_cast<float>(eps));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  };
  auto with_cache = [&](auto t, auto with_rope) {
    if (!cached_rows) {
      launch(t, with_rope, std::integral_constant<int, 0>{}, std::integral_constant<int, 1>{});
    } else if (warps_a_row == 2) {
      launch(t, with_rope, std::integral_constant<int, kCachedVectors>{},
             std::integral_constant<int, 2>{});
    } else {
      launch(t, with_rope, std::integral_constant<int, kCachedVectors>{},
             std::integral_constant<int, 1>{});
    }
  };
  auto with_rope = [&](auto t) {
    if (rope) {
      with_cache(t, std::true_type{});
    } else {
      with_cache(t, std::false_type{});
    }
  };
  qk_norm::with_type(x.scalar_type(), with_rope);
  return {out, r};
}

}  // namespace sg::kernels::cuda
