// The state digest must see every bit: equal tensors agree, any flipped bit, swapped pair,
// dtype or shape change disagrees, and layout (strides) does not matter.
#include "trainer/result/digest.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace sg::trainer {
namespace {

at::Tensor sample(int64_t n = 1000) {
  torch::manual_seed(7);
  return torch::randn({n});
}

TEST(Digest, EqualTensorsEqualHashes) {
  EXPECT_EQ(content_hash(sample()), content_hash(sample().clone()));
}

TEST(Digest, EveryFlippedBitChangesTheHash) {
  const at::Tensor base = sample(64);
  const uint64_t h = content_hash(base);
  for (int64_t i : {0, 31, 63}) {
    for (int bit = 0; bit < 32; ++bit) {
      at::Tensor t = base.clone();
      auto* words = static_cast<int32_t*>(t.data_ptr());
      words[i] ^= static_cast<int32_t>(1u << bit);
      EXPECT_NE(content_hash(t), h) << "element " << i << " bit " << bit;
    }
  }
}

TEST(Digest, SwappedElementsChangeTheHash) {
  at::Tensor t = sample(16);
  at::Tensor swapped = t.clone();
  swapped[3] = t[9];
  swapped[9] = t[3];
  EXPECT_NE(content_hash(t), content_hash(swapped));
}

TEST(Digest, NegativeZeroDiffersFromZero) {
  EXPECT_NE(content_hash(torch::zeros({4})), content_hash(-torch::zeros({4})));
}

TEST(Digest, LayoutDoesNotMatterButShapeAndDtypeDo) {
  const at::Tensor m = sample(12).view({3, 4});
  const at::Tensor transposed_back = m.t().contiguous().t();  // same values, other strides
  EXPECT_EQ(content_hash(m), content_hash(transposed_back));
  Digest a, b, c;
  a.add_tensor("w", m);
  b.add_tensor("w", m.view({4, 3}));
  c.add_tensor("w", m.to(at::kDouble));
  EXPECT_NE(a.hex(), b.hex());
  EXPECT_NE(a.hex(), c.hex());
}

TEST(Digest, ChunkBoundariesArePositionSensitive) {
  // More than one chunk (2^24 elements): moving a value across the boundary changes it.
  at::Tensor t = torch::zeros({(int64_t{1} << 24) + 8}, at::kByte);
  at::Tensor u = t.clone();
  t[(int64_t{1} << 24) - 1] = 1;
  u[int64_t{1} << 24] = 1;
  EXPECT_NE(content_hash(t), content_hash(u));
}

TEST(Digest, EveryElementWidthIsHashed) {
  for (auto dtype :
       {at::kDouble, at::kFloat, at::kBFloat16, at::kHalf, at::kByte, at::kBool, at::kLong}) {
    at::Tensor t = torch::ones({5}, dtype);
    at::Tensor u = t.clone();
    u[2] = 0;
    EXPECT_NE(content_hash(t), content_hash(u)) << c10::toString(dtype);
  }
}

}  // namespace
}  // namespace sg::trainer
