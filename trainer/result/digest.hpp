// Digests of training state: FNV-1a-64 over names, dtypes, shapes and a content hash of
// each tensor in canonical (registration) order. Equal bytes give equal digests; any
// changed, added or moved element changes the digest (up to 64-bit hash collisions).
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace sg::trainer {

class Digest {
 public:
  void add_bytes(const void* data, size_t n);
  void add_string(const std::string& s);
  void add_int(int64_t v);
  // Name, dtype, shape, then content_hash(t).
  void add_tensor(const std::string& name, const at::Tensor& t);
  std::string hex() const;

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

// Position-sensitive 64-bit hash of a tensor's element bits, computed on the tensor's own
// device (no host copy: digesting ~11 GB of base-size parameters and Adam state took
// ~15 s per run byte by byte on the host): each element's bits, widened to int64, plus
// (index+1) * golden ratio, mixed by splitmix64's finaliser, summed modulo 2^64. Integer
// addition is associative, so the value is the same on every device and reduction order.
uint64_t content_hash(const at::Tensor& t);

std::string digest_tensors(const std::vector<std::pair<std::string, at::Tensor>>& named);

}  // namespace sg::trainer
