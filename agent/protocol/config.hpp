// A candidate configuration: switch name -> value, only non-default entries.
// Its canonical key ("A=1,B=4", sorted; "" for the baseline) identifies it in the DB.
#pragma once
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/common/problem.hpp"
#include "agent/protocol/manifest.hpp"

namespace sg::agent {

using Config = std::map<std::string, std::string>;

std::string config_key(const Config& c);
Config config_from_key(const std::string& key);
std::string config_label(const Config& c);  // "baseline" or the key

// nullopt when valid, else a message naming the switch (unknown, unavailable, out of
// domain, unmet requires).
Problem validate_config(const Config& c, const Manifest& m);

// Adds the switches that `requires` demands (transitively). Returns false when the
// requirements conflict with values already set.
bool close_requires(Config& c, const Manifest& m);

// Environment entries (SG_NAME, value) for the trainer.
std::vector<std::pair<std::string, std::string>> config_env(const Config& c, const Manifest& m);

// `name` and every member of `c` that needs it: whose requires, closed transitively (for a
// kernel-variant entry KERNEL_<F>: its family's switch), include `name`. Dropping `name`
// from `c` means dropping all of these.
std::set<std::string> with_dependants(const Config& c, const std::string& name, const Manifest& m);

// Drops entries equal to the switch default.
Config normalize(const Config& c, const Manifest& m);

}  // namespace sg::agent
