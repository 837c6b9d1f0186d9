// FNV-1a-64 state digests (see digest.hpp).
#include "trainer/result/digest.hpp"

#include <cstdio>

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
  auto host = t.detach().to(at::kCPU).contiguous();
  add_bytes(host.data_ptr(), static_cast<size_t>(host.numel()) * host.element_size());
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
