// Plain or OSFT-factorised linear (see osft_linear.hpp).
#include "trainer/workload/lm/osft_linear.hpp"

#include "trainer/model/init_device.hpp"
#include "trainer/workload/lm/lm_config.hpp"

#include <cmath>

namespace sg::trainer {

LmLinearImpl::LmLinearImpl(int64_t in, int64_t out, bool osft_) : osft(osft_) {
  // torch.nn.Linear's default bound (kaiming_uniform with a = sqrt(5)).
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  auto w = torch::empty({out, in}, parameter_options()).uniform_(-bound, bound);
  if (!osft) {
    weight = register_parameter("weight", w);
    return;
  }
  auto svd = at::linalg_svd(w.to(at::kDouble), /*full_matrices=*/false);
  const auto& u = std::get<0>(svd);
  const auto& s = std::get<1>(svd);
  const auto v = std::get<2>(svd).transpose(0, 1);
  const int64_t rank = s.size(0), low = osft_low_rank(in, out), high = rank - low;
  auto part = [](const at::Tensor& t, int64_t dim, int64_t start, int64_t len) {
    return t.narrow(dim, start, len).to(at::kFloat).contiguous();
  };
  u_high = register_buffer("u_high", part(u, 1, 0, high));
  s_high = register_buffer("s_high", part(s, 0, 0, high));
  v_high = register_buffer("v_high", part(v, 1, 0, high));
  u_low = register_parameter("u_low", part(u, 1, high, low));
  s_low = register_parameter("s_low", part(s, 0, high, low));
  v_low = register_parameter("v_low", part(v, 1, high, low));
}

at::Tensor LmLinearImpl::effective_weight() const {
  if (!osft) return weight;
  return at::matmul(u_high * s_high, v_high.transpose(0, 1)) +
         at::matmul(u_low * s_low, v_low.transpose(0, 1));
}

at::Tensor LmLinearImpl::forward(const at::Tensor& x) { return at::linear(x, effective_weight()); }

}  // namespace sg::trainer
