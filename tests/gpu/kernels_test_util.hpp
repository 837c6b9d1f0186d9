// Shared helpers of the fused-kernel GPU tests (tests/gpu/kernels_*_test.cpp): row shapes,
// every legal parameter combination of a family, poisoned launcher outputs, and one
// forward + autograd backward of a variant on fresh leaves.
#pragma once

#include "kernels/common/cuda/launchers.hpp"
#include "kernels/common/dispatch.hpp"
#include "kernels/common/first_call.hpp"
#include "kernels/common/registry.hpp"

#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace sg::kernels::gpu_test {

inline std::string str(const ParamValues& p) {
  std::ostringstream os;
  for (const auto& [k, v] : p) os << k << "=" << v << " ";
  return os.str();
}

// [B, S, C] rows.
struct RowShape {
  int64_t b, seq, channels;
};

// `base` rows followed by the odd ones every row-wise family is checked on: one row of 5
// channels, and C = 33 and 1023 (not a multiple of any vector width).
inline std::vector<RowShape> with_odd_rows(std::vector<RowShape> base) {
  base.insert(base.end(), {{1, 1, 5}, {3, 7, 33}, {2, 9, 1023}});
  return base;
}

// Every legal parameter combination of a family's fused variant; none when that variant is
// not built (`fused` is nullptr), so a sweep that asserts a non-empty list fails there too.
inline std::vector<ParamValues> fused_params(const char* family_name, const Variant* fused) {
  return fused == nullptr ? std::vector<ParamValues>{} : legal_params(family(family_name));
}

// Fills every launcher output with NaN for the scope of a test.
class PoisonOutputs {
 public:
  PoisonOutputs() { cuda::poison_outputs_flag() = true; }
  ~PoisonOutputs() { cuda::poison_outputs_flag() = false; }
};

// What a sweep test runs under: poisoned launcher outputs and the generator seeded with its
// own seed.
class SweepScope {
 public:
  explicit SweepScope(uint64_t seed) { at::manual_seed(seed); }

 private:
  PoisonOutputs poison_;
};

struct Pass {
  std::vector<at::Tensor> outputs;
  std::vector<at::Tensor> grads;  // of every input, undefined where it has none
};

using Op = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

// Runs op on leaves aliasing `inputs` (the differentiable ones require grad), then
// backward with `seeds` (an undefined seed: that output is left out of the backward).
inline Pass run_pass(const Op& op, const std::vector<at::Tensor>& inputs,
                     const std::vector<bool>& differentiable,
                     const std::vector<at::Tensor>& seeds) {
  std::vector<at::Tensor> leaves;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto leaf = inputs[i].defined() ? inputs[i].detach()
                                    : inputs[i];  // undefined: an absent optional input
    if (differentiable[i] && leaf.defined()) leaf.requires_grad_(true);
    leaves.push_back(leaf);
  }
  Pass p;
  p.outputs = op(leaves);
  std::vector<at::Tensor> outs, gs, wrt;
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    if (seeds[i].defined()) {
      outs.push_back(p.outputs[i]);
      gs.push_back(seeds[i]);
    }
  }
  for (const auto& l : leaves) {
    if (l.defined() && l.requires_grad()) wrt.push_back(l);
  }
  auto grads = torch::autograd::grad(outs, wrt, gs, /*retain_graph=*/false, /*create_graph=*/false,
                                     /*allow_unused=*/true);
  size_t k = 0;
  for (const auto& l : leaves)
    p.grads.push_back(l.defined() && l.requires_grad() ? grads[k++] : at::Tensor());
  for (auto& o : p.outputs) o = o.detach();
  return p;
}

// run_pass of an op with one output, seeded with `seed`.
inline Pass run_single(const std::function<at::Tensor(const std::vector<at::Tensor>&)>& op,
                       const std::vector<at::Tensor>& inputs,
                       const std::vector<bool>& differentiable, const at::Tensor& seed) {
  return run_pass(
      [&](const std::vector<at::Tensor>& in) { return std::vector<at::Tensor>{op(in)}; }, inputs,
      differentiable, {seed});
}

// run_single of variant v's main op (run) with parameters p, its argument struct made of
// the two inputs in order (CAT's video and action, ROPE's x and table).
template <class V>
Pass run_main_op(const V& v, const ParamValues& p, const std::vector<at::Tensor>& inputs,
                 const std::vector<bool>& differentiable, const at::Tensor& seed) {
  return run_single([&](const std::vector<at::Tensor>& in) { return run_on_inputs(v, in, p); },
                    inputs, differentiable, seed);
}

// Bit-for-bit equality of two passes (outputs and every grad).
inline void expect_same(const Pass& ref, const Pass& got, const std::string& what) {
  ASSERT_EQ(ref.outputs.size(), got.outputs.size()) << what;
  for (size_t i = 0; i < ref.outputs.size(); ++i) {
    EXPECT_TRUE(at::equal(ref.outputs[i], got.outputs[i])) << what << " output " << i;
    EXPECT_TRUE(bitwise_equal(ref.outputs[i], got.outputs[i])) << what << " output bits " << i;
  }
  ASSERT_EQ(ref.grads.size(), got.grads.size()) << what;
  for (size_t i = 0; i < ref.grads.size(); ++i) {
    ASSERT_EQ(ref.grads[i].defined(), got.grads[i].defined()) << what << " grad " << i;
    if (!ref.grads[i].defined()) continue;
    EXPECT_TRUE(bitwise_equal(ref.grads[i], got.grads[i])) << what << " grad bits " << i;
  }
}

// Random values with a few signed zeros (the "+ 0" cases of the backward).
inline at::Tensor random_like_with_zeros(at::IntArrayRef sizes, at::ScalarType dtype,
                                         c10::Device device) {
  auto t = at::randn(sizes, at::TensorOptions().dtype(at::kFloat).device(device)).to(dtype);
  if (t.numel() >= 4) {
    t.view(-1).narrow(0, 0, 2).fill_(-0.0);
    t.view(-1).narrow(0, 2, 2).fill_(0.0);
  }
  return t;
}

inline c10::Device cuda0() { return c10::Device(c10::DeviceType::CUDA, 0); }

}  // namespace sg::kernels::gpu_test
