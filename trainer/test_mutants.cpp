// The mutation suite's test-only switches (see test_mutants.hpp; docs/protocol.md section 4).
#include "trainer/test_mutants.hpp"

#include "trainer/errors.hpp"
#include "trainer/switches/switch_table.hpp"
#include "trainer/workload/wam/flow_matching.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace sg::trainer {
namespace {

// MUT_CLIP's threshold. wam tiny's gradient norms are 2.0-3.1, so the recipe's 1.0 clips
// every step and a lower threshold would only scale every gradient alike (which Adam
// ignores); at 2.5 some steps are clipped and others not.
constexpr double kMutClipNorm = 2.5;
constexpr int64_t kWarmupSteps = 2;

// The test-only switches by kind: the kind's identity class and the start of its docs
// (recipe mutants and rounding switches are all declared tolerance), then each switch's
// name and what it does.
struct MutantKind {
  Identity identity;
  const char* doc_prefix;
  std::vector<std::pair<const char*, const char*>> mutants;
};

const std::vector<MutantKind>& mutant_kinds() {
  static const std::vector<MutantKind> kKinds = {
      {Identity::kBitwise, "test-only: ", {{"NOOP_A", "does nothing"}, {"NOOP_B", "does nothing"}}},
      {Identity::kTolerance,
       "test-only recipe mutant: ",
       {{"MUT_LR_3", "learning rate x1.03"},
        {"MUT_LR_10", "learning rate x1.10"},
        {"MUT_WEIGHT_DECAY", "AdamW weight decay x2"},
        {"MUT_BETA2", "Adam beta2 0.999 -> 0.99"},
        {"MUT_CLIP", "gradient clipping at 2.5 instead of 1.0"},
        {"MUT_WARMUP", "linear learning-rate warm-up, steps 0 and 1 at 1/3 and 2/3"},
        {"MUT_DROP_POSITIONS", "the last 1/8 of the latent columns leave the video loss"}}},
      {Identity::kTolerance,
       "test-only rounding switch: ",
       {{"ROUND_BF16_OUTPUT",
         "the predictions rounded to bf16 before the loss (as bf16 autocast's heads hand them "
         "over), and so their gradients"},
        {"ROUND_BF16_LINEAR",
         "the biased linear layers over token sequences computed in bf16 (input, weight and "
         "bias cast, as autocast does), the output cast back to float32"},
        {"ROUND_F64_LINEAR",
         "the biased linear layers over token sequences computed in float64 and rounded to "
         "float32 once (a more exact accumulation)"},
        {"ROUND_BF16_GRADS",
         "gradients rounded to bf16 before clipping and the optimizer (as a bf16 gradient "
         "all-reduce would)"}}},
  };
  return kKinds;
}

bool on(const Switches& sw, const char* name) {
  auto it = sw.resolved.find(std::string("SG_") + name);
  return it != sw.resolved.end() && it->second == "1";
}

TestMutants& process_mutants() {
  static TestMutants m;
  return m;
}

}  // namespace

void add_test_mutant_switches(std::vector<SwitchSpec>& table) {
  const char* v = std::getenv("SPEEDGATE_TEST_MUTANTS");
  const std::string mode = v == nullptr ? "" : v;
  if (mode.empty()) return;
  if (mode != "1" && mode != "only") {
    throw BadInputError("SPEEDGATE_TEST_MUTANTS=" + mode.substr(0, 80) +
                        " is neither 1 nor only (docs/protocol.md section 4)");
  }
  if (mode == "only") table.clear();
  for (const auto& kind : mutant_kinds()) {
    for (const auto& [name, what] : kind.mutants) {
      SwitchSpec s;
      s.name = name;
      s.type = SwitchType::kBool;
      s.values = {"0", "1"};
      s.default_value = "0";
      s.identity = kind.identity;
      s.effect = Effect::kSpeed;
      s.doc = std::string(kind.doc_prefix) + what;
      s.scope = SwitchScope::kWam;
      s.apply = [](Switches&, const std::string&) {};  // read back from Switches::resolved
      table.push_back(s);
    }
  }
}

TestMutants TestMutants::from(const Switches& sw) {
  TestMutants m;
  m.lr_factor = (on(sw, "MUT_LR_3") ? 1.03 : 1.0) * (on(sw, "MUT_LR_10") ? 1.10 : 1.0);
  m.weight_decay_factor = on(sw, "MUT_WEIGHT_DECAY") ? 2.0 : 1.0;
  m.beta2 = on(sw, "MUT_BETA2");
  m.clip = on(sw, "MUT_CLIP");
  m.warmup = on(sw, "MUT_WARMUP");
  m.drop_positions = on(sw, "MUT_DROP_POSITIONS");
  m.bf16_output = on(sw, "ROUND_BF16_OUTPUT");
  m.bf16_linear = on(sw, "ROUND_BF16_LINEAR");
  m.f64_linear = on(sw, "ROUND_F64_LINEAR");
  m.bf16_grads = on(sw, "ROUND_BF16_GRADS");
  return m;
}

torch::optim::AdamWOptions TestMutants::adamw(torch::optim::AdamWOptions options) const {
  if (lr_factor != 1.0) options.lr(options.lr() * lr_factor);
  if (weight_decay_factor != 1.0)
    options.weight_decay(options.weight_decay() * weight_decay_factor);
  if (beta2) options.betas(std::make_tuple(std::get<0>(options.betas()), 0.99));
  return options;
}

double TestMutants::max_grad_norm(double recipe) const { return clip ? kMutClipNorm : recipe; }

void TestMutants::round_gradients(const std::vector<at::Tensor>& params) const {
  if (!bf16_grads) return;
  torch::NoGradGuard no_grad;
  for (const auto& p : params) {
    if (p.grad().defined()) p.grad().copy_(p.grad().to(at::kBFloat16));
  }
}

std::vector<at::Tensor> TestMutants::before_update(const std::vector<at::Tensor>& params,
                                                   int64_t step) const {
  std::vector<at::Tensor> before;
  if (!warmup || step >= kWarmupSteps) return before;
  torch::NoGradGuard no_grad;
  for (const auto& p : params) before.push_back(p.detach().clone());
  return before;
}

void TestMutants::after_update(const std::vector<at::Tensor>& params,
                               const std::vector<at::Tensor>& before, int64_t step) const {
  if (before.empty()) return;
  torch::NoGradGuard no_grad;
  const double rate = static_cast<double>(step + 1) / static_cast<double>(kWarmupSteps + 1);
  for (size_t i = 0; i < params.size(); ++i) {
    at::Tensor p = params[i].detach();
    p.sub_(before[i]).mul_(rate).add_(before[i]);
  }
}

at::Tensor TestMutants::flow_loss(const at::Tensor& pred_v, const at::Tensor& pred_a,
                                  const FlowTargets& f) const {
  at::Tensor pv = bf16_output ? pred_v.to(at::kBFloat16) : pred_v;
  at::Tensor pa = bf16_output ? pred_a.to(at::kBFloat16) : pred_a;
  pv = pv.to(at::kFloat), pa = pa.to(at::kFloat);
  at::Tensor v = f.v;
  if (drop_positions) {
    const int64_t w = pv.size(-1);
    const int64_t kept = std::max<int64_t>(1, w - std::max<int64_t>(1, w / 8));
    pv = pv.narrow(-1, 0, kept), v = v.narrow(-1, 0, kept);
  }
  return at::mse_loss(pv, v) + at::mse_loss(pa, f.v_a);
}

at::Tensor TestMutants::linear(const at::Tensor& input, const at::Tensor& weight,
                               const at::Tensor& bias) const {
  const auto type = f64_linear ? at::kDouble : at::kBFloat16;
  return input.to(type).matmul(weight.to(type).t()).add(bias.to(type)).to(input.scalar_type());
}

const TestMutants& install_test_mutants(const Switches& sw) {
  process_mutants() = TestMutants::from(sw);
  return process_mutants();
}

const TestMutants& test_mutants() { return process_mutants(); }

}  // namespace sg::trainer
