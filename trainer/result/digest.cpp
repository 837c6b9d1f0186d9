// FNV-1a-64 state digests (see digest.hpp).
#include "trainer/result/digest.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace sg::trainer {

void Digest::add_bytes(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = h_;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  h_ = h;
}

void Digest::add_string(const std::string& s) {
  add_int(static_cast<int64_t>(s.size()));
  add_bytes(s.data(), s.size());
}

void Digest::add_int(int64_t v) { add_bytes(&v, sizeof v); }

void Digest::add_tensor(const std::string& name, const at::Tensor& t) {
  add_string(name);
  if (!t.defined()) {
    add_string("undefined");
    return;
  }
  add_string(c10::toString(t.scalar_type()));
  add_int(t.dim());
  for (auto s : t.sizes()) add_int(s);
  add_int(static_cast<int64_t>(content_hash(t)));
}

namespace {

// Elements per chunk: bounds the int64 temporaries to a few hundred MiB on any device.
constexpr int64_t kChunkElements = int64_t{1} << 24;
// splitmix64's constants as the int64 values with the same bits (ATen has no uint64 math;
// int64 multiplication and addition wrap modulo 2^64 like uint64 ones).
constexpr int64_t kGolden = static_cast<int64_t>(0x9e3779b97f4a7c15ULL);
constexpr int64_t kMix1 = static_cast<int64_t>(0xbf58476d1ce4e5b9ULL);
constexpr int64_t kMix2 = static_cast<int64_t>(0x94d049bb133111ebULL);

// Logical right shift of int64 bits: arithmetic shift, then clear the sign-extended bits.
at::Tensor shift_right_logical(const at::Tensor& z, int s) {
  return at::bitwise_and(at::bitwise_right_shift(z, s), static_cast<int64_t>((~uint64_t{0}) >> s));
}

// The element bits as int64 words (sign-extended from the element's width: a bijection).
at::Tensor element_words(const at::Tensor& flat) {
  switch (flat.element_size()) {
    case 8:
      return flat.view(at::kLong);
    case 4:
      return flat.view(at::kInt).to(at::kLong);
    case 2:
      return flat.view(at::kShort).to(at::kLong);
    case 1:
      return flat.view(at::kByte).to(at::kLong);
    default:
      throw std::runtime_error("digest: unsupported element size " +
                               std::to_string(flat.element_size()));
  }
}

}  // namespace

uint64_t content_hash(const at::Tensor& t) {
  at::NoGradGuard no_grad;
  const at::Tensor flat = t.detach().contiguous().view(-1);
  const int64_t n = flat.numel();
  int64_t total = 0;
  for (int64_t start = 0; start < n; start += kChunkElements) {
    const int64_t len = std::min(kChunkElements, n - start);
    at::Tensor z = element_words(flat.narrow(0, start, len));
    const auto index = at::arange(start + 1, start + len + 1, flat.options().dtype(at::kLong));
    z = z + index * kGolden;  // position-sensitive: swapped elements change the sum
    z = at::bitwise_xor(z, shift_right_logical(z, 30)).mul_(kMix1);
    z = at::bitwise_xor(z, shift_right_logical(z, 27)).mul_(kMix2);
    z = at::bitwise_xor(z, shift_right_logical(z, 31));
    total = static_cast<int64_t>(static_cast<uint64_t>(total) +
                                 static_cast<uint64_t>(z.sum().item<int64_t>()));
  }
  return static_cast<uint64_t>(total);
}

std::string Digest::hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
  return buf;
}

std::string digest_tensors(const std::vector<std::pair<std::string, at::Tensor>>& named) {
  Digest d;
  for (const auto& [name, t] : named) d.add_tensor(name, t);
  return d.hex();
}

}  // namespace sg::trainer
