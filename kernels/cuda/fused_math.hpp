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

#include <type_traits>

namespace sg::kernels::fused_math {

C10_HOST_DEVICE inline double dmul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
C10_HOST_DEVICE inline double dadd(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
C10_HOST_DEVICE inline double dsub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
C10_HOST_DEVICE inline float fmul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
C10_HOST_DEVICE inline float fadd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
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
template <typename T>
C10_HOST_DEVICE inline T from_float(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    return static_cast<T>(v);
  }
}

// ---- ROPE: (x0, x1) rotated by (c, s) with float64 products (rope3d_apply_reference):
//   o0 = x0*c - x1*s,  o1 = x0*s + x1*c, each product and sum rounded in float64.
C10_HOST_DEVICE inline void rope_forward(double x0, double x1, double c, double s, double& o0, double& o1) {
  o0 = dsub(dmul(x0, c), dmul(x1, s));
  o1 = dadd(dmul(x0, s), dmul(x1, c));
}
// The autograd backward of the same graph, rounding as the engine does:
//   SubBackward hands -g0 to x1*s; each MulBackward is grad*other; the two uses of x0
//   (and of x1) are summed (two terms: order-free); the two SelectBackward results are
//   zero-filled full tensors summed by the engine, so each element gets "+ 0.0" (turning
//   -0.0 into +0.0).
C10_HOST_DEVICE inline void rope_backward(double g0, double g1, double c, double s, double& gx0, double& gx1) {
  gx0 = dadd(dadd(dmul(g0, c), dmul(g1, s)), 0.0);
  gx1 = dadd(dadd(dmul(-g0, s), dmul(g1, c)), 0.0);
}

// ---- ADALN modulate: normed * (1 + scale) + shift in float32, three roundings.
C10_HOST_DEVICE inline float modulate_forward(float normed, float scale, float shift) {
  return fadd(fmul(normed, fadd(scale, 1.0f)), shift);
}
// grad of normed (before the cast to normed's dtype) and the per-element product whose
// sum over the broadcast rows is the grad of scale.
C10_HOST_DEVICE inline void modulate_backward(float g, float normed, float scale, float& g_normed, float& g_scale_elem) {
  g_normed = fmul(g, fadd(scale, 1.0f));
  g_scale_elem = fmul(g, normed);
}

// ---- gated residual: x + y * gate in float32, two roundings.
C10_HOST_DEVICE inline float gated_forward(float x, float y, float gate) { return fadd(x, fmul(y, gate)); }
// grad of y (before the cast to y's dtype) and the per-element product whose sum is the
// grad of gate; the grad of x is g cast to x's dtype.
C10_HOST_DEVICE inline void gated_backward(float g, float y, float gate, float& g_y, float& g_gate_elem) {
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
C10_HOST_DEVICE inline void rms_backward_products(float g, float xf, float r, float w, float& g_r_elem,
                                                  float& g_w_elem) {
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
