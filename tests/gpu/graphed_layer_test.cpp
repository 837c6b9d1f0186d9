// graphed() (SG_CUDA_GRAPHS's per-layer CUDA graphs) against checkpointed(), which has the
// same gradient boundary (one gradient per input, summed inside the layer): outputs and
// every gradient bitwise equal over several iterations with fresh values, with gradient
// accumulation into the parameters, under bf16 autocast, across shape changes and cache
// evictions, with bool / float64 / undefined / no-grad inputs. Label gpu.
#include "trainer/model/graphed_layer.hpp"
#include "trainer/model/checkpoint.hpp"
#include "trainer/runtime/autocast.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace sg::trainer {
namespace {

// Inputs: x [B, S, D] (grad), c [B, S, D] (grad, used twice), m [B, S, D] bool,
// t [S, D] float64 (no grad), u undefined, z [B, S, D] float (no grad).
TensorList body_of(const TensorList& in, const at::Tensor& w, const at::Tensor& b) {
  auto h = at::linear(in[0], w, b) + in[1];
  h = h.masked_fill(in[2].logical_not(), 0.0);
  h = h * in[3].to(h.scalar_type()) + in[5];
  auto out0 = at::gelu(h, "tanh") * in[1];
  auto out1 = at::softmax(h, -1, at::kFloat).sum(-1);
  return {out0, out1};
}

struct Side {
  at::Tensor w, b;
};

Side make_side(int64_t d) {
  torch::manual_seed(7);
  Side s;
  s.w = (torch::randn({d, d}, torch::kCUDA) / 8).requires_grad_(true);
  s.b = torch::randn({d}, torch::kCUDA).requires_grad_(true);
  return s;
}

TensorList inputs_of(int64_t batch, int64_t seq, int64_t d, uint64_t seed) {
  torch::manual_seed(seed);
  auto opts = torch::TensorOptions().device(torch::kCUDA);
  return {torch::randn({batch, seq, d}, opts).requires_grad_(true),
          torch::randn({batch, seq, d}, opts).requires_grad_(true),
          torch::rand({batch, seq, d}, opts) > 0.2,
          torch::rand({seq, d}, opts.dtype(torch::kDouble)) + 0.5,
          at::Tensor(),
          torch::randn({batch, seq, d}, opts)};
}

TensorList clone_inputs(const TensorList& in) {
  TensorList out;
  for (const auto& t : in) {
    if (!t.defined()) {
      out.emplace_back();
      continue;
    }
    auto c = t.detach().clone();
    if (t.requires_grad()) c.requires_grad_(true);
    out.push_back(c);
  }
  return out;
}

// One iteration on both sides: forward, a weighted-sum loss, backward (accumulating
// into the parameters); outputs and input gradients compared here.
void step(GraphedLayer& layer, Side& ref, Side& gra, int64_t batch, int64_t seq, int64_t d,
          uint64_t seed, bool autocast) {
  const auto in_ref = inputs_of(batch, seq, d, seed);
  const auto in_gra = clone_inputs(in_ref);
  auto weights = torch::randn({batch, seq, d}, torch::kCUDA);
  TensorList out_ref, out_gra;
  {
    AutocastScope scope({autocast, at::kBFloat16});
    out_ref = checkpointed([&ref](const TensorList& x) { return body_of(x, ref.w, ref.b); }, in_ref,
                           {ref.w, ref.b});
    out_gra = graphed(layer, [&gra](const TensorList& x) { return body_of(x, gra.w, gra.b); },
                      in_gra, {gra.w, gra.b});
  }
  ASSERT_EQ(out_ref.size(), out_gra.size());
  for (size_t i = 0; i < out_ref.size(); ++i)
    EXPECT_TRUE(at::equal(out_ref[i], out_gra[i])) << "output " << i;
  ((out_ref[0].to(at::kFloat) * weights).sum() + out_ref[1].sum() * 0.5).backward();
  ((out_gra[0].to(at::kFloat) * weights).sum() + out_gra[1].sum() * 0.5).backward();
  for (size_t i : {0, 1})
    EXPECT_TRUE(at::equal(in_ref[i].grad(), in_gra[i].grad())) << "input grad " << i;
}

void expect_params_equal(const Side& a, const Side& b) {
  EXPECT_TRUE(at::equal(a.w.grad(), b.w.grad()));
  EXPECT_TRUE(at::equal(a.b.grad(), b.b.grad()));
}

TEST(GraphedLayer, BitwiseEqualToCheckpointedWithAccumulation) {
  for (const bool autocast : {false, true}) {
    GraphedLayer layer("test");
    Side ref = make_side(64), gra = make_side(64);
    for (uint64_t it = 0; it < 5; ++it) {
      step(layer, ref, gra, 2, 16, 64, 100 + it, autocast);
      expect_params_equal(ref, gra);  // accumulated over the iterations so far
    }
    EXPECT_EQ(layer.captures(), 1u) << "autocast " << autocast;
    // In-place parameter updates are seen by the replays (the graph reads them in place).
    {
      torch::NoGradGuard no_grad;
      ref.w.sub_(ref.w.grad() * 1e-2);
      gra.w.sub_(gra.w.grad() * 1e-2);
      ref.w.mutable_grad() = at::Tensor();
      gra.w.mutable_grad() = at::Tensor();
    }
    step(layer, ref, gra, 2, 16, 64, 200, autocast);
    EXPECT_TRUE(at::equal(ref.w.grad(), gra.w.grad()));
    EXPECT_EQ(layer.captures(), 1u);
  }
}

TEST(GraphedLayer, NewShapesCaptureAndEvictionKeepsResults) {
  GraphedLayer layer("evict", /*max_signatures=*/1);
  Side ref = make_side(32), gra = make_side(32);
  const int64_t seqs[] = {8, 12, 8, 12};
  for (size_t i = 0; i < 4; ++i) step(layer, ref, gra, 2, seqs[i], 32, 300 + i, /*autocast=*/true);
  expect_params_equal(ref, gra);
  EXPECT_EQ(layer.captures(), 4u);  // every shape change evicts the other one
  EXPECT_EQ(layer.cached(), 1u);

  GraphedLayer roomy("roomy", /*max_signatures=*/2);
  for (size_t i = 0; i < 4; ++i) step(roomy, ref, gra, 2, seqs[i], 32, 400 + i, /*autocast=*/false);
  expect_params_equal(ref, gra);
  EXPECT_EQ(roomy.captures(), 2u);
}

TEST(GraphedLayer, WithoutGradRunsEagerly) {
  GraphedLayer layer("eval");
  Side s = make_side(16);
  const auto in = inputs_of(1, 4, 16, 9);
  torch::NoGradGuard no_grad;
  const auto out =
      graphed(layer, [&s](const TensorList& x) { return body_of(x, s.w, s.b); }, in, {s.w, s.b});
  const auto want = body_of(in, s.w, s.b);
  EXPECT_TRUE(at::equal(out[0], want[0]));
  EXPECT_EQ(layer.captures(), 0u);
}

TEST(GraphedLayer, RefusesSelfOverlappingInput) {
  GraphedLayer layer("overlap");
  Side s = make_side(16);
  auto in = inputs_of(1, 4, 16, 11);
  in[5] = torch::randn({1, 1, 16}, torch::kCUDA).expand({1, 4, 16});
  EXPECT_THROW(
      graphed(layer, [&s](const TensorList& x) { return body_of(x, s.w, s.b); }, in, {s.w, s.b}),
      std::logic_error);
}

}  // namespace
}  // namespace sg::trainer
