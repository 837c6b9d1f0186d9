// The one switch registry: every switch's name, type, domain, default, requires,
// identity class, effect, availability and doc, and where its value goes in Switches.
// describe --json, run-time validation and preset parsing all come from this table.
#pragma once

#include "trainer/switches/switches.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sg::trainer {

enum class SwitchType { kBool, kInt, kEnum };
enum class Identity { kBitwise, kTolerance };
enum class Effect { kSpeed, kMemory, kSchedule };
// The code that reads a switch. A workload reads the switches of the scopes it is built
// from (Workload::reads, trainer/workload/workload.hpp); a non-default value for a
// workload that does not read it is refused (exit 2).
enum class SwitchScope {
  kRuntime,    // process setup every run does (allocator, NUMA binding, deterministic mode)
  kLayers,     // the shared layers (attention, RoPE, checkpointing, CUDA graphs)
  kWam,        // wam's own code: text path, VAE, clip loader, its fused kernels, its loop
  kLmPacking,  // lm's packed batches
};

struct SwitchSpec {
  std::string name;  // "TEXT_CACHE"; env is "SG_" + name
  SwitchType type = SwitchType::kBool;
  std::vector<std::string> values;  // bool: {"0","1"}; enum: whole domain; int: candidates
  int64_t min = 0;                  // int only, inclusive
  int64_t max = 0;
  std::string default_value;
  std::vector<std::string>
  requires;  // "NAME=value" that must hold for a non-default value
  Identity identity = Identity::kBitwise;
  Effect effect = Effect::kSpeed;
  bool deterministic = true;  // false: some non-default value has no deterministic kernel
  std::string doc;
  // Which code reads it (the table's helpers default to kWam); describe --json lists the
  // workloads that read it.
  SwitchScope scope = SwitchScope::kWam;
  // Fewer data-parallel ranks than this and the switch does nothing (the DDP switches: 2);
  // a controller measuring on fewer ranks does not search it.
  int min_world_size = 1;
  // Empty when this build can run the switch; otherwise why not.
  std::string unavailable_reason;
  // Stores a validated value into Switches.
  std::function<void(Switches&, const std::string&)> apply;

  std::string env() const { return "SG_" + name; }
};

const std::vector<SwitchSpec>& switch_table();
// nullptr when no switch has this name (without the SG_ prefix).
const SwitchSpec* find_switch(const std::string& name);

const char* to_string(SwitchType type);
const char* to_string(Identity identity);
const char* to_string(Effect effect);

}  // namespace sg::trainer
