// The lm workloads' registry entries (trainer/workload/registry.cpp): lm, and lm_osft,
// the same model with OSFT-factorised block linears (lm_config.hpp).
#pragma once

#include "trainer/workload/workload.hpp"

namespace sg::trainer {

Workload lm_registration();
Workload lm_osft_registration();

}  // namespace sg::trainer
