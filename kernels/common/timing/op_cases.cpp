#include "kernels/common/timing/op_cases.hpp"

#include "kernels/rope/rope.hpp"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <stdexcept>

namespace sg::kernels {
namespace {

using Inputs = std::vector<at::Tensor>;

// bf16 autocast around one call on CUDA (as the model's forward runs); nothing on the CPU.
class AutocastIf {
 public:
  explicit AutocastIf(bool on) : on_(on) {
#if SPEEDGATE_WITH_CUDA
    if (on_) {
      at::autocast::set_autocast_enabled(at::kCUDA, true);
      at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    }
#endif
  }
  ~AutocastIf() {
#if SPEEDGATE_WITH_CUDA
    if (on_) {
      at::autocast::set_autocast_enabled(at::kCUDA, false);
      at::autocast::clear_cache();
    }
#endif
  }
  AutocastIf(const AutocastIf&) = delete;
  AutocastIf& operator=(const AutocastIf&) = delete;

 private:
  bool on_;
};

template <class V>
const V& pick(const V* fused, const V& plain, const ParamValues* params) {
  if (params == nullptr) return plain;
  if (fused == nullptr) throw std::invalid_argument("no fused variant in this build");
  return *fused;
}

const ParamValues kNone;
const ParamValues& values(const ParamValues* params) { return params ? *params : kNone; }

std::vector<Inputs> make_sets(int n, const std::function<Inputs()>& make) {
  std::vector<Inputs> sets;
  for (int i = 0; i < n; ++i) sets.push_back(make());
  return sets;
}

}  // namespace

std::vector<OpCase> op_cases(const std::string& family, const KernelShape& s, int input_sets) {
  const bool cuda = s.device.is_cuda();
  const auto opts = at::TensorOptions().device(s.device);
  const at::ScalarType low = cuda ? at::kBFloat16 : at::kFloat;  // a linear's output under autocast
  const char* low_name = cuda ? "bf16" : "fp32";
  const char* autocast_name = cuda ? " autocast" : "";
  const int64_t b = s.batch, tv = s.video_tokens, ta = s.action_tokens, heads = s.heads, hd = s.head_dim;
  const int64_t dv = heads * hd;
  auto table = [&] { return rope3d_table(s.latent_frames, s.grid_h, s.grid_w, hd, 10000.0, s.device); };
  std::vector<OpCase> out;
  if (family == "ROPE") {
    // q/k after the float32 RMSNorm: [B, Sv, heads, hd] float32.
    OpCase c{"rope fp32", family, 2.0 * b * tv * dv * 4,
             make_sets(input_sets, [&] { return Inputs{at::randn({b, tv, heads, hd}, opts)}; }), {}};
    c.run = [t = table()](const Inputs& in, const ParamValues* p) {
      return Inputs{pick(fused_rope(), plain_rope(), p).run({in[0], t}, values(p))};
    };
    out.push_back(std::move(c));
  } else if (family == "CAT") {
    // q/k [video; action] float32, v in the linear's dtype; the attention output's split.
    std::vector<at::ScalarType> dtypes{at::kFloat};
    if (low != at::kFloat) dtypes.push_back(low);
    for (auto dtype : dtypes) {
      OpCase c{std::string("cat ") + c10::toString(dtype), family, 2.0 * b * (tv + ta) * dv * c10::elementSize(dtype),
               make_sets(input_sets,
                         [&] { return Inputs{at::randn({b, tv, dv}, opts).to(dtype), at::randn({b, ta, dv}, opts).to(dtype)}; }),
               {}};
      c.run = [](const Inputs& in, const ParamValues* p) {
        return Inputs{pick(fused_cat(), plain_cat(), p).run({in[0], in[1]}, values(p))};
      };
      out.push_back(std::move(c));
    }
    OpCase split{std::string("split ") + low_name, family, 2.0 * b * (tv + ta) * dv * c10::elementSize(low),
                 make_sets(input_sets, [&] { return Inputs{at::randn({b, tv + ta, dv}, opts).to(low)}; }), {}};
    split.run = [tv](const Inputs& in, const ParamValues* p) {
      auto [v, a] = pick(fused_cat(), plain_cat(), p).split(in[0], tv, values(p));
      return Inputs{v, a};
    };
    out.push_back(std::move(split));
  } else if (family == "ADALN") {
    // modulate: rows in the linear's dtype -> float32; modulation vectors are chunks of
    // [B, 6, C] (shift, scale, gate, ...). Gated residual: float32 x + low y * gate.
    OpCase mod{std::string("modulate ") + low_name + autocast_name, family,
               double(b) * tv * dv * (c10::elementSize(low) + 4),
               make_sets(input_sets,
                         [&] {
                           auto m = at::randn({b, 6, dv}, opts).chunk(6, 1);
                           return Inputs{at::randn({b, tv, dv}, opts).to(low), m[0], m[1]};
                         }),
               {}};
    mod.run = [cuda](const Inputs& in, const ParamValues* p) {
      AutocastIf autocast(cuda);
      return Inputs{pick(fused_adaln(), plain_adaln(), p).run(AdalnArgs{in[0], in[1], in[2], 1e-6}, values(p))};
    };
    out.push_back(std::move(mod));
    OpCase gated{std::string("gated fp32+") + low_name, family, double(b) * tv * dv * (4 + c10::elementSize(low) + 4),
                 make_sets(input_sets,
                           [&] {
                             auto m = at::randn({b, 6, dv}, opts).chunk(6, 1);
                             return Inputs{at::randn({b, tv, dv}, opts), at::randn({b, tv, dv}, opts).to(low), m[2]};
                           }),
                 {}};
    gated.run = [](const Inputs& in, const ParamValues* p) {
      return Inputs{pick(fused_adaln(), plain_adaln(), p).gated_residual(in[0], in[1], in[2], values(p))};
    };
    out.push_back(std::move(gated));
    // The bias add of a linear's output (F::linear's `output += bias`): the attention and
    // MLP output widths. The plain add works in place on its input, as on the matmul output
    // it gets in the model, so every variant gets a fresh copy of the set's y (the same
    // copy for each: the ranking sees only the add; the times include the copy).
    for (int64_t width : {dv, 4 * dv}) {
      OpCase add{std::string("bias ") + low_name + " [" + std::to_string(width) + "]", family,
                 double(b) * tv * width * 2 * c10::elementSize(low) + 4.0 * width,
                 make_sets(input_sets,
                           [&] { return Inputs{at::randn({b, tv, width}, opts).to(low), at::randn({width}, opts)}; }),
                 {}};
      add.run = [](const Inputs& in, const ParamValues* p) {
        return Inputs{pick(fused_adaln(), plain_adaln(), p).bias_add(in[0].clone(), in[1], values(p))};
      };
      out.push_back(std::move(add));
    }
  } else if (family == "QKNORM") {
    // The q/k RMSNorm of a linear's output (action and cross-attention q/k) and, for the
    // video q/k, followed by the rotation (plain: the plain RMSNorm then the plain RoPE).
    for (bool rope : {false, true}) {
      OpCase c{std::string(rope ? "qknorm+rope " : "qknorm ") + low_name + autocast_name, family,
               double(b) * tv * dv * (c10::elementSize(low) + 4),
               make_sets(input_sets, [&] { return Inputs{at::randn({b, tv, dv}, opts).to(low), at::randn({dv}, opts)}; }),
               {}};
      c.run = [cuda, heads, t = rope ? table() : at::Tensor()](const Inputs& in, const ParamValues* p) {
        AutocastIf autocast(cuda);
        return Inputs{pick(fused_qk_norm(), plain_qk_norm(), p).run(QkNormArgs{in[0], in[1], 1e-6, t, heads}, values(p))};
      };
      out.push_back(std::move(c));
    }
  } else {
    throw std::invalid_argument("unknown kernel family '" + family + "'");
  }
  return out;
}

}  // namespace sg::kernels
