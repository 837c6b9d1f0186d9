// Strategy "kernels": tunes each kernel family's variant by kernel-level trials, not by
// training trials (a fused kernel is a few percent of a step, inside the noise of an
// end-to-end speed pair). Per available family whose trainer can time it (manifest
// `kernel_trial`, protocol §5) and whose switch is available:
//  1. one kernel trial times the plain variant and every legal parameter string on the
//     family's ops at the campaign's target shapes (recorded in kernel_timings);
//  2. the fused variants whose outputs and grads were bitwise the plain variant's are
//     ranked by forward + backward time;
//  3. the fastest is verified in training: {switch, KERNEL_<FAMILY>=it} is evaluated and
//     gated like any candidate (bitwise against the baseline for a bitwise switch). When
//     the gate fails, the next is tried (up to kVerifyTries);
//  4. the verified one becomes the family's choice: every later candidate that turns the
//     switch on carries it (SearchContext::make_candidate), so presets hold it.
// Run it first (`--plan kernels,stack,prune`) so the combinations are built on the
// tuned variants.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "agent/protocol/kernel_params.hpp"
#include "agent/search/strategy.hpp"

namespace sg::agent {
namespace {

constexpr int kVerifyTries = 3;

class Kernels : public Strategy {
 public:
  void run(SearchContext& ctx) override {
    for (const auto& f : ctx.manifest.kernel_families) {
      const SwitchSpec* sw = ctx.manifest.find_switch(f.switch_name);
      if (!f.available || !f.kernel_trial || !sw || !sw->available) continue;
      tune(ctx, f);
    }
  }

 private:
  static void tune(SearchContext& ctx, const KernelFamily& f) {
    std::vector<std::string> variants = {"plain"};
    for (const auto& v : kernel_candidates(f)) variants.push_back(v);
    auto timed = ctx.evaluator.time_kernels(f.name, variants);
    if (!timed) {
      spdlog::warn("[kernels] {}: no kernel trial result; the family keeps its default variant",
                   f.name);
      return;
    }
    std::vector<KernelVariantTiming> ranked;
    for (const auto& t : timed->variants) {
      if (t.plain()) continue;
      if (t.matches_plain) {
        ranked.push_back(t);
      } else {
        spdlog::warn("[kernels] {} {}: not bitwise the plain variant", f.name, t.params);
      }
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const KernelVariantTiming& a, const KernelVariantTiming& b) {
                       return a.fwdbwd_us < b.fwdbwd_us;
                     });
    const std::string name = kernel_config_name(f);
    for (int i = 0; i < static_cast<int>(ranked.size()) && i < kVerifyTries; ++i) {
      auto cand = ctx.make_candidate({{name, ranked[i].params}});
      if (!cand) continue;
      const Evaluation& e = ctx.evaluate(*cand, ctx.options.full_steps, "kernels");
      ctx.offer_single(name, e);
      if (e.correct()) {
        ctx.kernel_choice[name] = ranked[i].params;
        spdlog::info("[kernels] {}: {} ({:.1f} us forward + backward), verified in training ({})",
                     f.name, ranked[i].params, ranked[i].fwdbwd_us, to_string(e.disposition));
        return;
      }
    }
    spdlog::warn("[kernels] {}: no variant verified; the family keeps its default variant", f.name);
  }
};

}  // namespace
SG_REGISTER_STRATEGY(
    Kernels, "kernels",
    "time every kernel variant in kernel-level trials, verify the fastest in training")
}  // namespace sg::agent
