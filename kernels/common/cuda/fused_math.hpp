// Per-element math of the fused kernels, shared by the CUDA kernels and the CPU tests
// (tests/kernels/fused_math_test.cpp runs these same functions on the host against the
// ATen reference forward and autograd backward, bit for bit).
//
// Contract: every operation rounds exactly where the reference's separate ATen kernels
// round. On the device the *_rn intrinsics are never contracted into FMAs (and the .cu
// files are also compiled with -fmad=false); on the host the C++17 ISO mode of GCC does
// not contract either (-ffp-contract=off), and x86-64 without -mfma has no FMA anyway.
#pragma once

#include <c10/macros/Macros.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cmath>
#include <type_traits>

namespace sg::kernels::fused_math {

// One IEEE operation, rounded to nearest and never contracted: the _rn intrinsic on the
// device, the plain operator on the host.
#if defined(__CUDA_ARCH__)
#define SG_ROUNDED(intrinsic, op) return intrinsic(a, b)
#else
#define SG_ROUNDED(intrinsic, op) return a op b
#endif
C10_HOST_DEVICE inline double dmul(double a, double b) { SG_ROUNDED(__dmul_rn, *); }
C10_HOST_DEVICE inline double dadd(double a, double b) { SG_ROUNDED(__dadd_rn, +); }
C10_HOST_DEVICE inline double dsub(double a, double b) { SG_ROUNDED(__dsub_rn, -); }
C10_HOST_DEVICE inline float fmul(float a, float b) { SG_ROUNDED(__fmul_rn, *); }
C10_HOST_DEVICE inline float fadd(float a, float b) { SG_ROUNDED(__fadd_rn, +); }
// IEEE division, correctly rounded (nvcc's default -prec-div=true for a / b).
C10_HOST_DEVICE inline float fdiv(float a, float b) { SG_ROUNDED(__fdiv_rn, /); }
#undef SG_ROUNDED

// a - b is a + (-b) exactly, signed zeros included.
C10_HOST_DEVICE inline float fsub(float a, float b) { return fadd(a, -b); }
// a * b + c with one rounding (where ATen's own build contracted a multiply-add).
C10_HOST_DEVICE inline float ffma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// Widening conversions are exact.
template <typename T>
C10_HOST_DEVICE inline float to_float(T v) {
  return static_cast<float>(v);
}
template <typename T>
C10_HOST_DEVICE inline double to_double(T v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return static_cast<double>(static_cast<float>(v));
  }
}

// double -> T as ATen's copy kernel does it: to float (round to nearest), then, for the
// 16-bit types, float -> T (round to nearest even). Two roundings, like c10's
// static_cast<BFloat16>(double) which goes through the float constructor.
template <typename T>
C10_HOST_DEVICE inline T from_double(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else if constexpr (std::is_same_v<T, float>) {
#if defined(__CUDA_ARCH__)
    return __double2float_rn(v);
#else
    return static_cast<float>(v);
#endif
  } else {
    return static_cast<T>(from_double<float>(v));
  }
}
// float -> T rounds to nearest even (the identity for float).
template <typename T>
C10_HOST_DEVICE inline T from_float(float v) {
  return static_cast<T>(v);
}

// ---- ROPE: (x0, x1) rotated by (c, s) with float64 products (rope3d_apply_reference):
//   o0 = x0*c - x1*s,  o1 = x0*s + x1*c, each product and sum rounded in float64.
C10_HOST_DEVICE inline void rope_forward(double x0, double x1, double c, double s, double& o0,
                                         double& o1) {
  o0 = dsub(dmul(x0, c), dmul(x1, s));
  o1 = dadd(dmul(x0, s), dmul(x1, c));
}
// The autograd backward of the same graph, rounding as the engine does:
//   SubBackward hands -g0 to x1*s; each MulBackward is grad*other; the two uses of x0
//   (and of x1) are summed (two terms: order-free); the two SelectBackward results are
//   zero-filled full tensors summed by the engine, so each element gets "+ 0.0" (turning
//   -0.0 into +0.0).
C10_HOST_DEVICE inline void rope_backward(double g0, double g1, double c, double s, double& gx0,
                                          double& gx1) {
  gx0 = dadd(dadd(dmul(g0, c), dmul(g1, s)), 0.0);
  gx1 = dadd(dadd(dmul(-g0, s), dmul(g1, c)), 0.0);
}

// ---- ADALN modulate: normed * (1 + scale) + shift in float32, three roundings.
C10_HOST_DEVICE inline float modulate_forward(float normed, float scale, float shift) {
  return fadd(fmul(normed, fadd(scale, 1.0f)), shift);
}
// grad of normed (before the cast to normed's dtype) and the per-element product whose
// sum over the broadcast rows is the grad of scale.
C10_HOST_DEVICE inline float modulate_grad_normed(float g, float scale) {
  return fmul(g, fadd(scale, 1.0f));
}
C10_HOST_DEVICE inline void modulate_backward(float g, float normed, float scale, float& g_normed,
                                              float& g_scale_elem) {
  g_normed = modulate_grad_normed(g, scale);
  g_scale_elem = fmul(g, normed);
}

// ---- ADALN LayerNorm in ATen's order: what LibTorch 2.x's CUDA layer_norm runs for float32
// rows with C % 4 == 0 (vectorized_layer_norm_kernel, layer_norm_grad_input_kernel_vectorized,
// read off their sm_90 SASS in the torch 2.11 wheel: which multiply-adds nvcc contracted
// into FMAs, which divisions are IEEE). The row order around these steps (128 threads per
// row, 4 consecutive elements per load, warp shuffles, then a tree over the 4 warps) is
// kernels/adaln/layer_norm_order.cuh.
struct WelfordLN {
  float mean, sigma2, count;
};
// cuWelfordOnlineSum: delta = v - mean; count + 1; mean += delta * (1 / count) (one FMA);
// sigma2 += delta * (v - new mean) (one FMA).
// `reciprocal` is 1 / (w.count + 1), correctly rounded: a caller that knows the count passes
// a constant instead of dividing.
C10_HOST_DEVICE inline WelfordLN welford_push(WelfordLN w, float v, float reciprocal) {
  const float delta = fsub(v, w.mean);
  const float count = fadd(w.count, 1.0f);
  const float mean = ffma(delta, reciprocal, w.mean);
  return {mean, ffma(delta, fsub(v, mean), w.sigma2), count};
}
C10_HOST_DEVICE inline WelfordLN welford_push(WelfordLN w, float v) {
  return welford_push(w, v, fdiv(1.0f, fadd(w.count, 1.0f)));
}
// cuWelfordCombine(b, a): b is the thread's own partial, a the one shuffled or read in.
C10_HOST_DEVICE inline WelfordLN welford_combine(WelfordLN b, WelfordLN a) {
  const float delta = fsub(b.mean, a.mean);
  const float count = fadd(a.count, b.count);
  if (!(count > 0.0f)) return {0.0f, 0.0f, count};
  const float coef = fdiv(1.0f, count);
  const float na = fmul(a.count, coef);
  const float nb = fmul(b.count, coef);
  return {ffma(a.mean, na, fmul(nb, b.mean)),
          ffma(fmul(fmul(delta, delta), a.count), nb, fadd(a.sigma2, b.sigma2)), count};
}
// cuWelfordCombine when both partials hold `count` elements (every thread of the row pushed
// the same number, so every lane of a level combines equal counts): ATen's nA and nB are then
// the same value, `half` = count * (1 / (2 count)), which welford_equal_weight computes once
// per level instead of an IEEE division per combine. Same operations on the same values as
// welford_combine, so the same bits.
C10_HOST_DEVICE inline float welford_equal_weight(float count) {
  return fmul(count, fdiv(1.0f, fadd(count, count)));
}
C10_HOST_DEVICE inline WelfordLN welford_combine_equal(WelfordLN b, WelfordLN a, float count,
                                                       float half) {
  const float delta = fsub(b.mean, a.mean);
  return {ffma(a.mean, half, fmul(half, b.mean)),
          ffma(fmul(fmul(delta, delta), count), half, fadd(a.sigma2, b.sigma2)),
          fadd(count, count)};
}
// The normalised element: rstd * (x - mean), two roundings.
C10_HOST_DEVICE inline float layer_norm_normalize(float x, float mean, float rstd) {
  return fmul(rstd, fsub(x, mean));
}
// LayerNorm backward without affine, per element: the row sums' terms
//   sum1 += dy;  sum2 += (dy * (x - mean)) * rstd  (one FMA)
C10_HOST_DEVICE inline void layer_norm_grad_terms(float dy, float x, float mean, float rstd,
                                                  float& sum1, float& sum2) {
  sum1 = fadd(sum1, dy);
  sum2 = ffma(fmul(dy, fsub(x, mean)), rstd, sum2);
}
// and the input grad: (fma(dy, N, -((x - mean) * rstd) * sum2) - sum1) * term1, with
// term1 = (1 / N) * rstd.
C10_HOST_DEVICE inline float layer_norm_grad_input(float dy, float x, float mean, float rstd,
                                                   float sum1, float sum2, float n, float term1) {
  return fmul(term1, fsub(ffma(dy, n, -fmul(fmul(rstd, fsub(x, mean)), sum2)), sum1));
}

// ---- gated residual: x + y * gate in float32, two roundings.
C10_HOST_DEVICE inline float gated_forward(float x, float y, float gate) {
  return fadd(x, fmul(y, gate));
}
// grad of y (before the cast to y's dtype) and the per-element product whose sum is the
// grad of gate; the grad of x is g cast to x's dtype.
C10_HOST_DEVICE inline void gated_backward(float g, float y, float gate, float& g_y,
                                           float& g_gate_elem) {
  g_y = fmul(g, gate);
  g_gate_elem = fmul(g, y);
}

// ---- linear bias add: y += bias as ATen adds a float32 bias to a (bf16) matmul output in
// place: float(y) + bias in float32 (its add functor's a + 1 * b is that sum exactly), then one
// rounding to y's type (c10's round to nearest even).
template <typename T>
C10_HOST_DEVICE inline T bias_add(T y, float bias) {
  return from_float<T>(fadd(to_float(y), bias));
}

// ---- QKNORM: RMSNorm (rms_norm_reference) around ATen's own row reductions.
//   forward:  sq = xf * xf (pow(2) is base * base);  r = rsqrt(mean(sq) + eps) (ATen, per row);
//             out = float(T(xf * r)) * w  (normed cast to x's dtype, then promoted by the
//             float32 weight: three roundings).
C10_HOST_DEVICE inline float rms_square(float xf) { return fmul(xf, xf); }
template <typename T>
C10_HOST_DEVICE inline float rms_normalize(float xf, float r, float w) {
  return fmul(to_float(from_float<T>(fmul(xf, r))), w);
}
//   backward, first pass: the grad of the cast normed (g * w, cast to T by the engine and
//   widened back by ToCopyBackward), the per-element product whose row sum is the grad of
//   r (sum_to), and the per-element product whose column sum is the grad of w.
template <typename T>
C10_HOST_DEVICE inline float rms_grad_normed(float g, float w) {
  return to_float(from_float<T>(fmul(g, w)));
}
template <typename T>
C10_HOST_DEVICE inline void rms_backward_products(float g, float xf, float r, float w,
                                                  float& g_r_elem, float& g_w_elem) {
  g_r_elem = fmul(rms_grad_normed<T>(g, w), xf);
  g_w_elem = fmul(g, to_float(from_float<T>(fmul(xf, r))));
}
//   backward, second pass: MulBackward's g_normed * r plus PowBackward's
//   g_mean * (2 * xf), where g_mean is the row's mean grad (rsqrt and mean backward run
//   in ATen on the [rows, 1] tensors), summed by the engine, cast to x's dtype.
template <typename T>
C10_HOST_DEVICE inline T rms_grad_input(float g, float xf, float r, float w, float g_mean) {
  return from_float<T>(fadd(fmul(rms_grad_normed<T>(g, w), r), fmul(g_mean, fmul(xf, 2.0f))));
}

// ---- CAT: a split's two grads are zero-filled full tensors summed by the engine, so
// the joined grad is "v + 0" in v's op math type (-0.0 becomes +0.0, all else unchanged).
template <typename T>
C10_HOST_DEVICE inline T plus_zero(T v) {
  if constexpr (std::is_same_v<T, double>) {
    return dadd(v, 0.0);
  } else {
    return from_float<T>(fadd(to_float(v), 0.0f));
  }
}

}  // namespace sg::kernels::fused_math
