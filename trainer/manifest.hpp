// describe --json: the manifest (docs/protocol.md section 1), built from the switch
// table, the size table and the kernel registry.
#pragma once

#include <nlohmann/json.hpp>

namespace sg::trainer {

nlohmann::json build_manifest();

}  // namespace sg::trainer
