// Resolves switches from the SG_* environment and an optional .env preset, validating
// everything against the switch table before anything is applied.
#pragma once

#include "trainer/switches/switches.hpp"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace sg::trainer {

struct SwitchSpec;  // switch_table.hpp

// One KEY=value line of a preset file.
struct PresetEntry {
  std::string key;
  std::string value;
  int line = 0;
};

// Parses and validates a whole preset file (syntax, known switch, domain, availability).
// Throws BadInputError naming the file, the line and the switch on the first bad line.
std::vector<PresetEntry> read_preset(const std::string& path);

// SG_* variables of this process's environment.
std::map<std::string, std::string> sg_environment();

// Validates environment + preset (the environment wins) and returns the resolved
// switches. Unknown SG_* names, out-of-domain values, unavailable switches set to a
// non-default value and unmet requires throw BadInputError naming the switch.
Switches resolve_switches(const std::map<std::string, std::string>& env,
                          const std::string& preset_path);

// The workloads that read a switch, in registration order (workload_names_reading in
// trainer/workload/workload.hpp).
using SwitchReaders = std::function<std::vector<std::string>(const SwitchSpec&)>;

// Throws BadInputError naming the switch when one set to a non-default value (or a kernel
// family variable) is not read by `workload` (per `readers`): a switch the workload's code
// never reads would otherwise be silently ignored.
void check_switches_apply(const Switches& sw, const std::string& workload,
                          const SwitchReaders& readers);

}  // namespace sg::trainer
