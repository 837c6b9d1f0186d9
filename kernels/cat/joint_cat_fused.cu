// Fused [video; action] row copies: the concatenation (video rows then action rows per
// batch) and its inverse split, each one pass. Row mode: a 2-D block copies
// rows_per_block rows, `threads` threads per row. Flat mode: a 1-D grid-stride loop over
// every unit of every row (no threads idle at row ends; one wave of blocks). Both copy in
// the widest unit (16/8/4/2/1 bytes) the row size and pointers allow. The split's
// backward joins with "+ 0" per element (see fused_math.hpp); flat mode applies it to
// every element of a wide unit.
#include "kernels/cat/cat_launchers.hpp"
#include "kernels/common/cuda/fused_math.hpp"

#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace sg::kernels::cuda {
namespace {

// Rows of the joint tensor are (b, s), s < seq; s < video_len lives in video, the rest in
// action. kGather: joint <- parts (cat); otherwise parts <- joint (split).
template <typename U, bool kGather, bool kPlusZero>
__global__ void joint_rows_kernel(U* joint, U* video, U* action, int64_t rows, int64_t seq,
                                  int64_t video_len, int64_t units_per_row) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (row >= rows) return;
  const int64_t b = row / seq, s = row % seq;
  const int64_t action_len = seq - video_len;
  U* part = s < video_len ? video + (b * video_len + s) * units_per_row
                          : action + (b * action_len + (s - video_len)) * units_per_row;
  U* whole = joint + row * units_per_row;
  for (int64_t u = threadIdx.x; u < units_per_row; u += blockDim.x) {
    if constexpr (kGather) {
      if constexpr (kPlusZero) {
        whole[u] = fused_math::plus_zero(part[u]);
      } else {
        whole[u] = part[u];
      }
    } else {
      part[u] = whole[u];
    }
  }
}

// "+ 0" on each T of a unit U (sizeof(U) a multiple of sizeof(T)).
template <typename T, typename U>
__device__ inline U plus_zero_unit(U v) {
  constexpr int kN = sizeof(U) / sizeof(T);
  T e[kN];
  memcpy(e, &v, sizeof(U));
#pragma unroll
  for (int i = 0; i < kN; ++i) e[i] = fused_math::plus_zero(e[i]);
  memcpy(&v, e, sizeof(U));
  return v;
}

// Flat mode. T: the element type for "+ 0" (void: a raw copy). I: 32-bit when every
// unit index fits.
template <typename U, typename T, bool kGather, typename I>
__global__ void joint_flat_kernel(U* joint, U* video, U* action, I total, I seq, I video_len,
                                  I units_per_row) {
  const I stride = static_cast<I>(gridDim.x) * blockDim.x;
  for (I u = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; u < total; u += stride) {
    const I row = u / units_per_row, k = u % units_per_row;
    const I b = row / seq, s = row % seq;
    U* part = s < video_len
                  ? video + (b * video_len + s) * units_per_row + k
                  : action + (b * (seq - video_len) + (s - video_len)) * units_per_row + k;
    if constexpr (!kGather) {
      *part = joint[u];
    } else if constexpr (std::is_void_v<T>) {
      joint[u] = *part;
    } else {
      joint[u] = plus_zero_unit<T>(*part);
    }
  }
}

template <typename U, typename T, bool kGather>
void launch_flat(void* joint, void* video, void* action, int64_t rows, int64_t seq,
                 int64_t video_len, int64_t units_per_row, int64_t threads) {
  const int64_t total = rows * units_per_row;
  const int64_t wave =
      int64_t{at::cuda::getCurrentDeviceProperties()->multiProcessorCount} * (2048 / threads);
  const int64_t blocks = std::max<int64_t>(1, std::min((total + threads - 1) / threads, wave));
  auto stream = at::cuda::getCurrentCUDAStream();
  auto go = [&](auto index) {
    using I = decltype(index);
    joint_flat_kernel<U, T, kGather, I>
        <<<static_cast<unsigned>(blocks), static_cast<unsigned>(threads), 0, stream>>>(
            static_cast<U*>(joint), static_cast<U*>(video), static_cast<U*>(action), I(total),
            I(seq), I(video_len), I(units_per_row));
  };
  // u + stride stays below total + blocks * threads.
  if (total + blocks * threads < (int64_t{1} << 32)) {
    go(uint32_t{0});
  } else {
    go(int64_t{0});
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

int64_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int64_t align = 16;
  while (align > 1 && a % align != 0) align /= 2;
  return align;
}

template <typename U, bool kGather, bool kPlusZero>
void launch_rows(void* joint, void* video, void* action, int64_t rows, int64_t seq,
                 int64_t video_len, int64_t units_per_row, int64_t threads,
                 int64_t rows_per_block) {
  const int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
  TORCH_CHECK(blocks < (int64_t{1} << 31), "joint_cat: too many blocks");
  const dim3 grid(static_cast<unsigned>(blocks));
  const dim3 block(static_cast<unsigned>(threads), static_cast<unsigned>(rows_per_block));
  joint_rows_kernel<U, kGather, kPlusZero><<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
      static_cast<U*>(joint), static_cast<U*>(video), static_cast<U*>(action), rows, seq, video_len,
      units_per_row);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The widest unit (16/8/4/2/1 bytes) every pointer and the row size allow.
int64_t copy_unit(const at::Tensor& joint, const at::Tensor& video, const at::Tensor& action) {
  const int64_t row_bytes = joint.size(2) * joint.element_size();
  int64_t unit = std::min({alignment_of(joint.data_ptr()), alignment_of(video.data_ptr()),
                           alignment_of(action.data_ptr())});
  while (unit > 1 && row_bytes % unit != 0) unit /= 2;
  return unit;
}

// Calls f(U{}) for the unit type of `unit` bytes.
template <typename F>
void with_unit(int64_t unit, F&& f) {
  if (unit == 16) return f(uint4{});
  if (unit == 8) return f(uint2{});
  if (unit == 4) return f(uint32_t{});
  if (unit == 2) return f(uint16_t{});
  f(uint8_t{});
}

// Raw copy (row or flat mode) in the widest unit.
template <bool kGather>
void copy_rows(const at::Tensor& joint, const at::Tensor& video, const at::Tensor& action,
               int64_t threads, int64_t rows_per_block, bool flat) {
  const int64_t unit = copy_unit(joint, video, action);
  const int64_t rows = joint.size(0) * joint.size(1), seq = joint.size(1),
                video_len = video.size(1);
  const int64_t units = joint.size(2) * joint.element_size() / unit;
  with_unit(unit, [&](auto u) {
    using U = decltype(u);
    if (flat) {
      launch_flat<U, void, kGather>(joint.data_ptr(), video.data_ptr(), action.data_ptr(), rows,
                                    seq, video_len, units, threads);
    } else {
      launch_rows<U, kGather, false>(joint.data_ptr(), video.data_ptr(), action.data_ptr(), rows,
                                     seq, video_len, units, threads, rows_per_block);
    }
  });
}

void check_operands(const at::Tensor& joint, const at::Tensor& video, const at::Tensor& action,
                    int64_t threads, int64_t rows_per_block) {
  TORCH_CHECK(
      joint.is_cuda() && video.device() == joint.device() && action.device() == joint.device(),
      "joint_cat: operands on different devices");
  TORCH_CHECK(joint.dim() == 3 && video.dim() == 3 && action.dim() == 3 && joint.is_contiguous() &&
                  video.is_contiguous() && action.is_contiguous(),
              "joint_cat: operands must be contiguous [B, S, C]");
  TORCH_CHECK(
      video.scalar_type() == joint.scalar_type() && action.scalar_type() == joint.scalar_type(),
      "joint_cat: dtypes differ");
  TORCH_CHECK(video.size(0) == joint.size(0) && action.size(0) == joint.size(0) &&
                  video.size(2) == joint.size(2) && action.size(2) == joint.size(2) &&
                  video.size(1) + action.size(1) == joint.size(1),
              "joint_cat: shapes do not match");
  TORCH_CHECK(threads > 0 && rows_per_block > 0 && threads * rows_per_block <= 1024,
              "joint_cat: bad params");
}

}  // namespace

at::Tensor joint_cat(const at::Tensor& video, const at::Tensor& action, int64_t threads,
                     int64_t rows_per_block, bool flat, bool plus_zero) {
  const c10::cuda::CUDAGuard guard(video.device());
  auto joint =
      empty_output({video.size(0), video.size(1) + action.size(1), video.size(2)}, video.options());
  check_operands(joint, video, action, threads, rows_per_block);
  if (joint.numel() == 0) return joint;
  if (!plus_zero) {
    copy_rows<true>(joint, video, action, threads, rows_per_block, flat);
    return joint;
  }
  const int64_t rows = joint.size(0) * joint.size(1), seq = joint.size(1),
                video_len = video.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kBFloat16, at::kHalf, joint.scalar_type(), "joint_cat_plus_zero", [&] {
        if (flat) {
          // Every unit is a whole number of elements: pointers and rows are element-aligned.
          const int64_t unit = copy_unit(joint, video, action);
          with_unit(unit, [&](auto u) {
            using U = decltype(u);
            if constexpr (sizeof(U) >= sizeof(scalar_t)) {
              launch_flat<U, scalar_t, true>(joint.data_ptr(), video.data_ptr(), action.data_ptr(),
                                             rows, seq, video_len,
                                             joint.size(2) * joint.element_size() / unit, threads);
            } else {
              TORCH_CHECK(false, "joint_cat: unit narrower than an element");
            }
          });
        } else {
          launch_rows<scalar_t, true, true>(joint.data_ptr(), video.data_ptr(), action.data_ptr(),
                                            rows, seq, video_len, joint.size(2), threads,
                                            rows_per_block);
        }
      });
  return joint;
}

std::pair<at::Tensor, at::Tensor> joint_split(const at::Tensor& joint, int64_t video_len,
                                              int64_t threads, int64_t rows_per_block, bool flat) {
  TORCH_CHECK(video_len >= 0 && video_len <= joint.size(1), "joint_split: bad video_len");
  const c10::cuda::CUDAGuard guard(joint.device());
  auto video = empty_output({joint.size(0), video_len, joint.size(2)}, joint.options());
  auto action =
      empty_output({joint.size(0), joint.size(1) - video_len, joint.size(2)}, joint.options());
  check_operands(joint, video, action, threads, rows_per_block);
  if (joint.numel() > 0) copy_rows<false>(joint, video, action, threads, rows_per_block, flat);
  return {video, action};
}

}  // namespace sg::kernels::cuda
