// Which ops and kernels a training step's time goes to: the op-level companion of
// phase_profile.hpp, for the H200 results files. Enabled by SPEEDGATE_PROFILE_OPS=PATH
// (deliberately not an SG_* switch: it changes timing, never what is computed, and is
// never searched or written into a preset). When set, LibTorch's Kineto profiler records
// the steady-state steps (CPU ops, and on CUDA the device activity) and PATH receives a
// JSON summary, written atomically (docs/protocol.md section 6):
//   {"steps", "device", "torch", "total_us", "device_us", "cpu_self_us",
//    "ops": [{"name", "kind", "calls", "total_us", "self_us", "avg_us", "percent", "from"}]}
// A device row's "from" says which CPU ops launched it: up to kFromPaths launch paths by
// device time, each {"path", "calls", "total_us"}; a path is the launching op and the ops
// around it on its thread (the innermost three, outermost first, with the autograd node
// they run in when that is further out), then the launching op's input dtypes and shapes:
//   "autograd::engine::evaluate_function: AddBackward0 > aten::add [bf16[32,1280,1536], f32[...]]"
// (input shapes are recorded for this: the profiler's per-op cost grows a little).
// Profiled runs are slower (the profiler's callbacks on every op): compare shares, not
// samples/s, with unprofiled runs.
#pragma once

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sg::trainer {

inline constexpr const char* kProfileOpsVariable = "SPEEDGATE_PROFILE_OPS";

// One profiler event, reduced to what the summary needs.
struct OpEvent {
  std::string name;
  std::string kind;     // "cpu_op", or device activity: "cuda_kernel", "cuda_memcpy", "cuda_memset"
  uint64_t thread = 0;  // cpu_op: the recording thread (nesting is per thread)
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  // cpu_op: its correlation id; device activity: the id of the CPU op that launched it
  // (Kineto's linked correlation). 0 = unknown.
  uint64_t correlation = 0;
  std::string inputs;  // cpu_op: "bf16[32,1280,1536], f32[1536]" when shapes were recorded
};

inline constexpr size_t kFromPaths = 3;

// Aggregates events by (kind group, name): device activity first, by total time; then CPU
// ops by self time (their time minus the ops nested in them on the same thread). Each
// group keeps its `top` rows plus one "(other)" row for the rest; `percent` is the share
// of the group's time (device: total, CPU: self); each kept device row has its "from"
// launch paths. Returns {"device_us", "cpu_self_us", "ops"}.
nlohmann::json summarize_op_events(const std::vector<OpEvent>& events, size_t top);

class OpProfile {
 public:
  // Reads SPEEDGATE_PROFILE_OPS; unset or empty: disabled, every call a no-op. Set and
  // `writer` (rank 0 of a run): checks before any training that PATH can be written and
  // that this LibTorch's profiler records ops on `device` (a short probe), else throws
  // BadInputError naming the variable. Other ranks do not profile.
  OpProfile(c10::Device device, bool writer);
  ~OpProfile();  // stops a profiler still running (a failed run); writes nothing
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  bool enabled() const { return !path_.empty(); }
  // Starts recording; the device is synchronised first so earlier work stays out.
  void start();
  // Synchronises, stops recording and writes PATH for `steps` recorded steps.
  void finish(int64_t steps);

 private:
  std::string path_;
  c10::Device device_;
  bool running_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace sg::trainer
