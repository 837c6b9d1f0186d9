// graphed() on a build without CUDA graphs (CI's CPU build): CUDA_GRAPHS is unavailable
// there (Protocol tests), and a direct call with grad mode on refuses loudly instead of
// silently running eagerly; without grad it runs the body as on every build.
#include "trainer/model/graphed_layer.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

namespace sg::trainer {
namespace {

#if !SPEEDGATE_WITH_CUDA || TORCH_VERSION_MAJOR < 2
TEST(GraphedLayerCpu, RefusesWithGradRunsBodyWithout) {
  GraphedLayer layer("cpu.0");
  auto w = torch::randn({4, 4}).requires_grad_(true);
  auto body = [&w](const TensorList& in) -> TensorList { return {at::linear(in[0], w)}; };
  const TensorList in{torch::randn({2, 4})};
  try {
    graphed(layer, body, in, {w});
    FAIL() << "graphed() ran on a build without CUDA graphs";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("cpu.0"), std::string::npos) << e.what();
  }
  torch::NoGradGuard no_grad;
  const auto out = graphed(layer, body, in, {w});
  EXPECT_TRUE(at::equal(out[0], at::linear(in[0], w)));
  EXPECT_EQ(layer.captures(), 0u);
}
#endif

}  // namespace
}  // namespace sg::trainer
