// The protocol's `run --perturb EPS` (docs/protocol.md §2): the tolerance gate's rounding
// band is how far training moves from this run's plain twin when only the initial
// parameters move by a relative EPS (bf16's precision, 2^-8, by default in the controller).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

namespace sg::trainer {

// Every element x of every tensor in `named` (in order) becomes x * (1 + eps * s), s = +-1
// drawn from a CPU generator seeded with (seed, 0x5eed); the same on every rank. eps == 0
// leaves the tensors untouched (bitwise the unperturbed run).
void perturb_parameters(const std::vector<std::pair<std::string, at::Tensor>>& named, double eps,
                        uint64_t seed);

}  // namespace sg::trainer
