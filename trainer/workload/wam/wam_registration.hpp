// The wam workload's registry entry (trainer/workload/registry.cpp).
#pragma once

#include "trainer/workload/workload.hpp"

namespace sg::trainer {

Workload wam_registration();

}  // namespace sg::trainer
