// Strategy "minify": for each combination in ctx.pending_minify that failed the
// gate, remove switches one at a time while the remainder still fails (1-minimal
// delta debugging). The result, usually one switch or a pair, is recorded in
// ctx.conflicts so no later combination contains it. A switch goes with what needs it
// (with_dependants: e.g. its KERNEL_<F> variant, which would otherwise turn it back on);
// kernel-variant entries are not removed on their own (the `kernels` strategy's choice
// would put them back).
#include <spdlog/spdlog.h>

#include "agent/search/strategy.hpp"

namespace sg::agent {
namespace {

class Minify : public Strategy {
 public:
  void run(SearchContext& ctx) override {
    while (!ctx.pending_minify.empty()) {
      Config failing = ctx.pending_minify.front();
      ctx.pending_minify.erase(ctx.pending_minify.begin());
      bool shrunk = true;
      while (shrunk && failing.size() > 1) {
        shrunk = false;
        for (const auto& [name, value] : failing) {
          if (!ctx.manifest.find_switch(name)) continue;  // a kernel variant: goes with its switch
          Config smaller = failing;
          for (const auto& gone : with_dependants(failing, name, ctx.manifest)) smaller.erase(gone);
          auto c = ctx.make_candidate(smaller);
          if (!c || *c == failing || c->empty()) continue;
          const Evaluation& e = ctx.evaluate(*c, ctx.options.full_steps, "minify");
          if (e.disposition == Disposition::gate_failed) {
            failing = *c;
            shrunk = true;
            break;
          }
        }
      }
      spdlog::warn("minifier: {} breaks the gate", config_key(failing));
      ctx.conflicts.push_back(failing);
    }
  }
};

}  // namespace
SG_REGISTER_STRATEGY(Minify, "minify",
                     "isolate the switch or pair that makes a combination fail the gate")
}  // namespace sg::agent
