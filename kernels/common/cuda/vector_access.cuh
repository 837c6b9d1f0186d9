// Aligned vector accesses for the elementwise CUDA kernels: kPack consecutive elements loaded
// and stored as one access (16 bytes for 4 floats, 8 for 4 bf16) when kPack > 1.
#pragma once

namespace sg::kernels::cuda {

template <typename T, int kPack>
struct alignas(sizeof(T) * kPack) Pack {
  T v[kPack];
};
template <int kPack, typename T, typename I>
__device__ inline Pack<T, kPack> load(const T* __restrict__ p, I i) {
  return *reinterpret_cast<const Pack<T, kPack>*>(p + i);
}
template <int kPack, typename T, typename I>
__device__ inline void store(T* __restrict__ p, I i, const Pack<T, kPack>& v) {
  *reinterpret_cast<Pack<T, kPack>*>(p + i) = v;
}

// Calls f(e) for each element e of a pack, unrolled.
template <int kPack, typename F>
__device__ __forceinline__ void for_each_element(F&& f) {
#pragma unroll
  for (int e = 0; e < kPack; ++e) f(e);
}

// A pack widened to float (exact for float32 and bf16).
template <int kPack, typename T>
__device__ inline void widen(const Pack<T, kPack>& packed, float (&v)[kPack]) {
#pragma unroll
  for (int e = 0; e < kPack; ++e) v[e] = static_cast<float>(packed.v[e]);
}
// Elements i .. i + kPack - 1 of p, widened to float.
template <int kPack, typename T, typename I>
__device__ inline void load_float(const T* __restrict__ p, I i, float (&v)[kPack]) {
  widen(load<kPack>(p, i), v);
}

}  // namespace sg::kernels::cuda
