// Kernel op dispatch and the first-call check (see kernel_ops.hpp).
#include "kernels/common/dispatch.hpp"

#include <c10/core/InferenceMode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <functional>
#include <iostream>
#include <mutex>
#include <set>
#include <stdexcept>

namespace sg::kernels {
namespace {

const ParamValues kNoParams;

struct FamilyState {
  bool selected = false;
  ParamValues params;          // complete: defaults filled in
  std::set<std::string> passed;  // ops whose first fused call matched plain
  bool fell_back = false;
  bool inject_mismatch = false;
};

struct State {
  std::mutex mu;
  FamilyState rope, cat, adaln, qk_norm;
  const RopeVariant* rope_override = nullptr;
  const CatVariant* cat_override = nullptr;
  const AdalnVariant* adaln_override = nullptr;
  const QkNormVariant* qk_norm_override = nullptr;
};

State& state() {
  static State s;
  return s;
}

const RopeVariant* rope_fused() { return state().rope_override ? state().rope_override : fused_rope(); }
const CatVariant* cat_fused() { return state().cat_override ? state().cat_override : fused_cat(); }
const AdalnVariant* adaln_fused() { return state().adaln_override ? state().adaln_override : fused_adaln(); }
const QkNormVariant* qk_norm_fused() {
  return state().qk_norm_override ? state().qk_norm_override : fused_qk_norm();
}

using OpFn = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

struct Trial {
  std::vector<at::Tensor> outputs;
  std::vector<at::Tensor> grads;  // of the differentiable inputs, in order
};

// Runs fn on fresh leaves aliasing the inputs (differentiable ones require grad), then
// backward with `seeds` (default: the outputs themselves) as the incoming grads. Uses no
// random numbers: the training run's generator state is untouched.
Trial trial(const OpFn& fn, const std::vector<at::Tensor>& inputs, const std::vector<bool>& differentiable,
            const std::vector<at::Tensor>* seeds) {
  at::AutoGradMode grad_on(true);
  std::vector<at::Tensor> ins, leaves;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto t = inputs[i].detach();
    if (differentiable[i]) {
      t.requires_grad_(true);
      leaves.push_back(t);
    }
    ins.push_back(t);
  }
  Trial r;
  r.outputs = fn(ins);
  std::vector<at::Tensor> seed;
  if (seeds != nullptr) {
    seed = *seeds;
  } else {
    for (const auto& o : r.outputs) seed.push_back(o.detach().clone());
  }
  r.grads = torch::autograd::grad(r.outputs, leaves, seed, /*retain_graph=*/false, /*create_graph=*/false,
                                  /*allow_unused=*/true);
  for (auto& o : r.outputs) o = o.detach();
  return r;
}

bool same_tensors(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].defined() != b[i].defined()) return false;
    if (a[i].defined() && !bitwise_equal(a[i], b[i])) return false;
  }
  return true;
}

// True when fused and plain agree bit for bit in outputs and input grads.
bool same_forward_backward(const OpFn& fused, const OpFn& plain, const std::vector<at::Tensor>& inputs,
                           const std::vector<bool>& differentiable) {
  const Trial ref = trial(plain, inputs, differentiable, nullptr);
  std::vector<at::Tensor> seeds;
  for (const auto& o : ref.outputs) seeds.push_back(o.clone());
  const Trial got = trial(fused, inputs, differentiable, &seeds);
  return same_tensors(ref.outputs, got.outputs) && same_tensors(ref.grads, got.grads);
}

// Whether this call may run fused: the family is selected and has not fallen back, the
// variant can implement the problem, and the op's first fused call matched plain.
bool use_fused(FamilyState& fs, const Variant* fused, const Problem& problem, const char* family, const char* op,
               const std::function<bool()>& compare) {
  if (!fs.selected || fused == nullptr || fs.fell_back) return false;
  if (fused->can_implement(problem, fs.params) != Status::kSuccess) return false;
  std::lock_guard<std::mutex> lock(state().mu);
  if (fs.fell_back) return false;
  if (fs.passed.count(op) != 0) return true;
  // Inference tensors cannot require grad: run plain until a call that can be checked.
  if (c10::InferenceMode::is_enabled()) return false;
  bool same = false;
  std::string why = "outputs or grads differ";
  try {
    same = compare() && !fs.inject_mismatch;
    if (fs.inject_mismatch) why = "mismatch injected by a test";
  } catch (const std::exception& e) {
    why = std::string("the comparison failed: ") + e.what();
  }
  fs.inject_mismatch = false;
  if (!same) {
    fs.fell_back = true;
    std::cerr << "speedgate: kernel family " << family << " (" << op << "): the fused variant differs from "
              << "plain_aten on its first call (" << why << "); using plain_aten for the rest of this process\n";
    return false;
  }
  fs.passed.insert(op);
  return true;
}

void set_family(FamilyState& fs, bool selected, bool has_fused, const std::string& name,
                const std::map<std::string, std::string>& params) {
  ParamValues values = family(name).defaults;
  if (selected) {
    if (!has_fused) throw std::invalid_argument("kernel family " + name + " has no fused variant in this build");
    auto it = params.find(name);
    if (it != params.end()) {
      const auto err = parse_params(family(name), it->second, &values);
      if (!err.empty()) throw std::invalid_argument("SG_KERNEL_" + name + "=" + it->second + ": " + err);
    }
  }
  if (fs.selected != selected || fs.params != values) {
    fs.passed.clear();
    fs.fell_back = false;
  }
  fs.selected = selected;
  fs.params = values;
}

}  // namespace

bool bitwise_equal(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes() || a.device() != b.device()) return false;
  if (!at::isFloatingType(a.scalar_type())) return at::equal(a, b);
  at::ScalarType bits = at::kLong;
  switch (a.element_size()) {
    case 2: bits = at::kShort; break;
    case 4: bits = at::kInt; break;
    default: bits = at::kLong; break;
  }
  return at::equal(a.contiguous().view(bits), b.contiguous().view(bits));
}

void select_kernels(const KernelSelection& sel) {
  auto& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  set_family(st.rope, sel.fused_rope, rope_fused() != nullptr, "ROPE", sel.params);
  set_family(st.cat, sel.fast_cat, cat_fused() != nullptr, "CAT", sel.params);
  set_family(st.adaln, sel.fused_adaln, adaln_fused() != nullptr, "ADALN", sel.params);
  set_family(st.qk_norm, sel.fused_qk_norm, qk_norm_fused() != nullptr, "QKNORM", sel.params);
}

at::Tensor rope_apply(const at::Tensor& x, const at::Tensor& table) {
  auto& fs = state().rope;
  const auto* fused = rope_fused();
  auto compare = [&] {
    return same_forward_backward(
        [&](const std::vector<at::Tensor>& in) { return std::vector<at::Tensor>{fused->run({in[0], in[1]}, fs.params)}; },
        [&](const std::vector<at::Tensor>& in) { return std::vector<at::Tensor>{plain_rope().run({in[0], in[1]}, kNoParams)}; },
        {x, table}, {true, false});
  };
  if (use_fused(fs, fused, rope_problem({x, table}), "ROPE", "rope", compare)) return fused->run({x, table}, fs.params);
  return plain_rope().run({x, table}, kNoParams);
}

at::Tensor joint_cat(const at::Tensor& video, const at::Tensor& action) {
  auto& fs = state().cat;
  const auto* fused = cat_fused();
  auto compare = [&] {
    return same_forward_backward(
        [&](const std::vector<at::Tensor>& in) { return std::vector<at::Tensor>{fused->run({in[0], in[1]}, fs.params)}; },
        [&](const std::vector<at::Tensor>& in) { return std::vector<at::Tensor>{plain_cat().run({in[0], in[1]}, kNoParams)}; },
        {video, action}, {true, true});
  };
  if (use_fused(fs, fused, cat_problem({video, action}), "CAT", "cat", compare)) {
    return fused->run({video, action}, fs.params);
  }
  return plain_cat().run({video, action}, kNoParams);
}

std::pair<at::Tensor, at::Tensor> joint_split(const at::Tensor& joint, int64_t video_len) {
  auto& fs = state().cat;
  const auto* fused = cat_fused();
  auto as_list = [](std::pair<at::Tensor, at::Tensor> p) { return std::vector<at::Tensor>{p.first, p.second}; };
  auto compare = [&] {
    return same_forward_backward(
        [&](const std::vector<at::Tensor>& in) { return as_list(fused->split(in[0], video_len, fs.params)); },
        [&](const std::vector<at::Tensor>& in) { return as_list(plain_cat().split(in[0], video_len, kNoParams)); },
        {joint}, {true});
  };
  if (use_fused(fs, fused, split_problem(joint, video_len), "CAT", "split", compare)) {
    return fused->split(joint, video_len, fs.params);
  }
  return plain_cat().split(joint, video_len, kNoParams);
}

at::Tensor adaln_modulate(const at::Tensor& x, const at::Tensor& shift, const at::Tensor& scale, double eps) {
  auto& fs = state().adaln;
  const auto* fused = adaln_fused();
  auto compare = [&] {
    return same_forward_backward(
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{fused->run({in[0], in[1], in[2], eps}, fs.params)};
        },
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{plain_adaln().run({in[0], in[1], in[2], eps}, kNoParams)};
        },
        {x, shift, scale}, {true, true, true});
  };
  const AdalnArgs args{x, shift, scale, eps};
  if (use_fused(fs, fused, adaln_problem(args), "ADALN", "modulate", compare)) return fused->run(args, fs.params);
  return plain_adaln().run(args, kNoParams);
}

at::Tensor gated_residual(const at::Tensor& x, const at::Tensor& y, const at::Tensor& gate) {
  auto& fs = state().adaln;
  const auto* fused = adaln_fused();
  auto compare = [&] {
    return same_forward_backward(
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{fused->gated_residual(in[0], in[1], in[2], fs.params)};
        },
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{plain_adaln().gated_residual(in[0], in[1], in[2], kNoParams)};
        },
        {x, y, gate}, {true, true, true});
  };
  if (use_fused(fs, fused, gated_problem(x, y, gate), "ADALN", "gated", compare)) {
    return fused->gated_residual(x, y, gate, fs.params);
  }
  return plain_adaln().gated_residual(x, y, gate, kNoParams);
}

at::Tensor bias_add(const at::Tensor& y, const at::Tensor& bias) {
  auto& fs = state().adaln;
  const auto* fused = adaln_fused();
  auto compare = [&] {
    return same_forward_backward(
        [&](const std::vector<at::Tensor>& in) { return std::vector<at::Tensor>{fused->bias_add(in[0], in[1], fs.params)}; },
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{plain_adaln().bias_add(in[0], in[1], kNoParams)};
        },
        {y, bias}, {true, true});
  };
  if (use_fused(fs, fused, bias_problem(y, bias), "ADALN", "bias", compare)) return fused->bias_add(y, bias, fs.params);
  return plain_adaln().bias_add(y, bias, kNoParams);
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  auto& fs = state().qk_norm;
  const auto* fused = qk_norm_fused();
  const QkNormArgs args{x, weight, eps, at::Tensor(), 1};
  auto compare = [&] {
    return same_forward_backward(
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{fused->run({in[0], in[1], eps, at::Tensor(), 1}, fs.params)};
        },
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{plain_qk_norm().run({in[0], in[1], eps, at::Tensor(), 1}, kNoParams)};
        },
        {x, weight}, {true, true});
  };
  if (use_fused(fs, fused, qk_norm_problem(args), "QKNORM", "norm", compare)) return fused->run(args, fs.params);
  return plain_qk_norm().run(args, kNoParams);
}

at::Tensor rms_norm_rope(const at::Tensor& x, const at::Tensor& weight, double eps, const at::Tensor& table,
                         int64_t heads) {
  auto& fs = state().qk_norm;
  const auto* fused = qk_norm_fused();
  const QkNormArgs args{x, weight, eps, table, heads};
  auto compare = [&] {
    return same_forward_backward(
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{fused->run({in[0], in[1], eps, in[2], heads}, fs.params)};
        },
        [&](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{plain_qk_norm().run({in[0], in[1], eps, in[2], heads}, kNoParams)};
        },
        {x, weight, table}, {true, true, false});
  };
  const bool rope_on = state().rope.selected && !state().rope.fell_back;
  if (rope_on && use_fused(fs, fused, qk_norm_problem(args), "QKNORM", "norm_rope", compare)) {
    return fused->run(args, fs.params);
  }
  const int64_t b = x.size(0), s = x.size(1), c = x.size(2);
  return rope_apply(rms_norm(x, weight, eps).view({b, s, heads, c / heads}), table);
}

std::vector<std::string> fallen_back_families() {
  auto& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  std::vector<std::string> out;
  if (st.rope.fell_back) out.push_back("ROPE");
  if (st.cat.fell_back) out.push_back("CAT");
  if (st.adaln.fell_back) out.push_back("ADALN");
  if (st.qk_norm.fell_back) out.push_back("QKNORM");
  return out;
}

namespace testing {

void reset_first_call_checks() {
  auto& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  for (FamilyState* fs : {&st.rope, &st.cat, &st.adaln, &st.qk_norm}) {
    fs->passed.clear();
    fs->fell_back = false;
    fs->inject_mismatch = false;
  }
}

void inject_first_call_mismatch(const std::string& family_name) {
  auto& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (family_name == "ROPE") st.rope.inject_mismatch = true;
  if (family_name == "CAT") st.cat.inject_mismatch = true;
  if (family_name == "ADALN") st.adaln.inject_mismatch = true;
  if (family_name == "QKNORM") st.qk_norm.inject_mismatch = true;
}

void override_fused(const RopeVariant* rope, const CatVariant* cat, const AdalnVariant* adaln) {
  auto& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.rope_override = rope;
  st.cat_override = cat;
  st.adaln_override = adaln;
}

void override_fused_qk_norm(const QkNormVariant* qk_norm) {
  auto& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.qk_norm_override = qk_norm;
}

}  // namespace testing
}  // namespace sg::kernels
