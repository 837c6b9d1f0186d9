#include "agent/search/memory_points.hpp"

#include <algorithm>
#include <vector>

namespace sg::agent {

void evaluate_memory_points(SearchContext& ctx, const Config& combination,
                            const std::string& strategy) {
  if (combination.empty()) return;
  std::vector<const SwitchSpec*> memory;
  for (const auto& s : ctx.manifest.switches) {
    if (s.available && s.effect == "memory") memory.push_back(&s);
  }
  std::stable_sort(memory.begin(), memory.end(), [](const SwitchSpec* a, const SwitchSpec* b) {
    const auto rank = [](const SwitchSpec* s) {
      return s->type == "int" ? static_cast<int>(s->values.size()) : 0;
    };
    return rank(a) > rank(b);
  });
  for (const SwitchSpec* sp : memory) {
    const SwitchSpec& s = *sp;
    for (const auto& v : s.values) {
      if (v == s.default_value) continue;
      Config c = combination;
      c[s.name] = v;
      auto cand = ctx.make_candidate(c);
      if (!cand || *cand == combination || ctx.contains_conflict(*cand)) continue;
      ctx.evaluate(*cand, ctx.options.full_steps, strategy);
    }
  }
}

}  // namespace sg::agent
