// Byte-exact digests of training state: FNV-1a-64 over names, dtypes, shapes and the raw
// bytes of each tensor in canonical (registration) order. Equal digest = equal bytes.
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
  // Name, dtype, shape, then the bytes of a contiguous host copy.
  void add_tensor(const std::string& name, const at::Tensor& t);
  std::string hex() const;

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

std::string digest_tensors(const std::vector<std::pair<std::string, at::Tensor>>& named);

}  // namespace sg::trainer
