// Op-level profiling with LibTorch's Kineto profiler (see op_profile.hpp).
#include "trainer/runtime/op_profile.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>
#include <torch/version.h>
#if __has_include(<kineto/ActivityType.h>)  // pip's wheels ship Kineto's headers, Debian's not
#include <kineto/ActivityType.h>
#define SG_KINETO_HEADERS 1
#endif

#include "trainer/errors.hpp"
#include "trainer/result/run_result.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <utility>

namespace sg::trainer {
namespace {

namespace tp = torch::autograd::profiler;

// libkineto::ActivityType values (kineto/ActivityType.h; the first entries have kept
// their numbers since Kineto's first release). Debian's LibTorch ships no Kineto headers,
// so they are spelled out here and checked where the header exists.
constexpr uint8_t kCpuOp = 0;
constexpr uint8_t kGpuMemcpy = 3;
constexpr uint8_t kGpuMemset = 4;
constexpr uint8_t kConcurrentKernel = 5;
#ifdef SG_KINETO_HEADERS
static_assert(kCpuOp == static_cast<uint8_t>(libkineto::ActivityType::CPU_OP));
static_assert(kGpuMemcpy == static_cast<uint8_t>(libkineto::ActivityType::GPU_MEMCPY));
static_assert(kGpuMemset == static_cast<uint8_t>(libkineto::ActivityType::GPU_MEMSET));
static_assert(kConcurrentKernel ==
              static_cast<uint8_t>(libkineto::ActivityType::CONCURRENT_KERNEL));
#endif

constexpr size_t kTopRows = 60;

// An event's start and duration on KinetoEvent's clock: LibTorch 1.13 has
// startUs()/durationUs(), 2.x startNs()/durationNs() (and isHiddenEvent()). Chosen by which
// members exist rather than by TORCH_VERSION_*, since the release that switched is not
// pinned down here; both compile either way.
struct Span {
  int64_t start_ns, duration_ns;
};
template <class E>
auto span(const E& e, int)
    -> decltype(Span{static_cast<int64_t>(e.startNs()), static_cast<int64_t>(e.durationNs())}) {
  return {static_cast<int64_t>(e.startNs()), static_cast<int64_t>(e.durationNs())};
}
template <class E>
Span span(const E& e, long) {
  return {static_cast<int64_t>(e.startUs()) * 1000, static_cast<int64_t>(e.durationUs()) * 1000};
}
template <class E>
auto hidden(const E& e, int) -> decltype(static_cast<bool>(e.isHiddenEvent())) {
  return e.isHiddenEvent();
}
template <class E>
bool hidden(const E&, long) {
  return false;
}

void synchronize(c10::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index() < 0 ? -1 : device.index());
}

void enable_profiler(c10::Device device) {
  const tp::ProfilerConfig config(tp::ProfilerState::KINETO, /*report_input_shapes=*/true);
  std::set<tp::ActivityType> activities{tp::ActivityType::CPU};
  if (device.is_cuda()) activities.insert(tp::ActivityType::CUDA);
  tp::prepareProfiler(config, activities);
  tp::enableProfiler(config, activities);
}

// "bf16[32,1280,1536], f32[1536]": a CPU op's tensor inputs as recorded with
// report_input_shapes. Other arguments (no dtype, or the profiler's "Scalar", "ScalarList",
// "TensorList", "GenericList") are left out.
template <class E>
std::string inputs_of(const E& e) {
  if (!e.hasShapes() || !e.hasTypes()) return "";
  const auto shapes = e.shapes();
  const auto types = e.dtypes();
  std::string out;
  for (size_t i = 0; i < shapes.size() && i < types.size(); ++i) {
    if (types[i].empty() || types[i] == "Scalar" || types[i] == "ScalarList" ||
        types[i] == "TensorList" || types[i] == "GenericList") {
      continue;
    }
    std::string dims;
    for (int64_t d : shapes[i]) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    std::string type = types[i];
    if (type == "c10::BFloat16")
      type = "bf16";
    else if (type == "float")
      type = "f32";
    else if (type == "c10::Half")
      type = "f16";
    out += (out.empty() ? "" : ", ") + type + "[" + dims + "]";
  }
  return out;
}

// The events the summary uses: CPU ops (RecordFunction: aten ops, autograd nodes) and
// device kernels, copies and fills. Runtime calls (cudaLaunchKernel...) and annotations
// are left out: they would double-count the ops and kernels they belong to.
std::vector<OpEvent> collect(const tp::ProfilerResult& result) {
  std::vector<OpEvent> out;
  for (const auto& e : result.events()) {
    if (hidden(e, 0)) continue;
    const uint8_t activity = e.activityType();
    const bool on_device = e.deviceType() != c10::DeviceType::CPU;
    std::string kind;
    if (!on_device && activity == kCpuOp)
      kind = "cpu_op";
    else if (on_device && activity == kConcurrentKernel)
      kind = "cuda_kernel";
    else if (on_device && activity == kGpuMemcpy)
      kind = "cuda_memcpy";
    else if (on_device && activity == kGpuMemset)
      kind = "cuda_memset";
    else
      continue;
    const Span t = span(e, 0);
    out.push_back({e.name(), std::move(kind), e.startThreadId(), t.start_ns, t.duration_ns,
                   on_device ? e.linkedCorrelationId() : e.correlationId(),
                   on_device ? "" : inputs_of(e)});
  }
  return out;
}

std::string variable_is(const std::string& path) {
  return std::string(kProfileOpsVariable) + "=" + path;
}

// Fails now, with the variable named, rather than after the whole run.
void check_writable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw BadInputError(variable_is(path) +
                        ": is a directory (give the path of the JSON file to write)");
  }
  // write_file_atomically's temporary lives next to PATH: try creating one.
  const std::string probe = path + ".probe." + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    throw BadInputError(variable_is(path) + ": cannot write there (" + std::strerror(errno) + ")");
  ::close(fd);
  ::unlink(probe.c_str());
}

// Profiles two tiny ops on `device`: a build whose profiler records no CPU ops (or, on
// CUDA, no kernels: Kineto without CUPTI) cannot give the summary asked for.
void check_profiler_records(c10::Device device) {
  std::vector<OpEvent> events;
  try {
    enable_profiler(device);
    {
      at::Tensor t = at::ones({8}, at::TensorOptions().device(device));
      t = t + t;
      synchronize(device);
    }
    events = collect(*tp::disableProfiler());
  } catch (const c10::Error& e) {
    throw BadInputError(
        std::string(kProfileOpsVariable) +
        " is set, but this LibTorch's Kineto profiler cannot run: " + e.what_without_backtrace());
  }
  bool cpu = false, dev = false;
  for (const auto& e : events) (e.kind == "cpu_op" ? cpu : dev) = true;
  if (!cpu || (device.is_cuda() && !dev)) {
    throw BadInputError(std::string(kProfileOpsVariable) +
                        " is set, but this LibTorch's Kineto profiler records no " +
                        (cpu ? "CUDA kernels (CUPTI unavailable?)" : "CPU ops") +
                        ": op profiling is not usable in this build");
  }
}

double us(double ns) { return std::round(ns) / 1000.0; }

// Nesting of CPU ops: on each thread ops nest (aten::linear > aten::addmm); an op's self
// time is its time minus that of the ops directly inside it.
struct Nesting {
  std::vector<int64_t> child_ns;
  std::vector<size_t> parent;  // innermost enclosing op; events.size() = none
};

Nesting nest_cpu_ops(const std::vector<OpEvent>& events) {
  Nesting n{std::vector<int64_t>(events.size(), 0),
            std::vector<size_t>(events.size(), events.size())};
  std::map<uint64_t, std::vector<size_t>> by_thread;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind == "cpu_op") by_thread[events[i].thread].push_back(i);
  }
  for (auto& [thread, idx] : by_thread) {
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      if (events[a].start_ns != events[b].start_ns) return events[a].start_ns < events[b].start_ns;
      if (events[a].duration_ns != events[b].duration_ns)
        return events[a].duration_ns > events[b].duration_ns;
      return events[a].correlation <
             events[b].correlation;  // ids grow as ops are entered: the enclosing op first
    });
    std::vector<size_t> open;
    for (size_t i : idx) {
      const auto end = [&](size_t k) { return events[k].start_ns + events[k].duration_ns; };
      // An op that starts when the open one does is inside it (LibTorch 1.13's clock has
      // whole microseconds: a wrapper and the op it calls often share start and duration).
      while (!open.empty() && end(open.back()) <= events[i].start_ns &&
             events[open.back()].start_ns != events[i].start_ns) {
        open.pop_back();
      }
      if (!open.empty()) {
        n.child_ns[open.back()] += events[i].duration_ns;
        n.parent[i] = open.back();
      }
      open.push_back(i);
    }
  }
  return n;
}

// Launch paths: the CPU op with a device event's correlation id, and what encloses it.
class LaunchPaths {
 public:
  LaunchPaths(const std::vector<OpEvent>& events, const std::vector<size_t>& parent)
      : events_(events), parent_(parent) {
    for (size_t i = 0; i < events.size(); ++i) {
      if (events[i].kind == "cpu_op" && events[i].correlation != 0)
        op_by_correlation_[events[i].correlation] = i;
    }
  }

  // "" when no CPU op launched `e`.
  std::string of(const OpEvent& e) {
    auto it = op_by_correlation_.find(e.correlation);
    if (e.correlation == 0 || it == op_by_correlation_.end()) return "";
    auto [cached, fresh] = path_of_op_.emplace(it->second, "");
    if (!fresh) return cached->second;
    std::vector<size_t> chain;  // innermost first
    for (size_t k = it->second; k < events_.size(); k = parent_[k]) chain.push_back(k);
    constexpr size_t kLevels = 3;
    std::string path;
    for (size_t level = std::min(kLevels, chain.size()); level-- > 0;) {
      path += (path.empty() ? "" : " > ") + events_[chain[level]].name;
    }
    for (size_t level = kLevels; level < chain.size(); ++level) {
      const std::string& name = events_[chain[level]].name;
      if (name.rfind("autograd::engine::evaluate_function: ", 0) == 0) {
        path = name + (level == kLevels ? " > " : " > ... > ") + path;
        break;
      }
    }
    const std::string& inputs = events_[it->second].inputs;
    cached->second = inputs.empty() ? path : path + " [" + inputs + "]";
    return cached->second;
  }

 private:
  const std::vector<OpEvent>& events_;
  const std::vector<size_t>& parent_;
  std::map<uint64_t, size_t> op_by_correlation_;
  std::map<size_t, std::string> path_of_op_;  // by launching op: each built once
};

struct From {
  int64_t calls = 0;
  double total_ns = 0;
};
struct Row {
  std::string name, kind;
  int64_t calls = 0;
  double total_ns = 0, self_ns = 0;
  std::map<std::string, From> from;  // device rows: by launch path
};

// One row per (kind, name), in that order.
std::map<std::pair<std::string, std::string>, Row> aggregate(const std::vector<OpEvent>& events) {
  const Nesting nesting = nest_cpu_ops(events);
  LaunchPaths launch_path(events, nesting.parent);
  std::map<std::pair<std::string, std::string>, Row> rows;  // (kind, name)
  for (size_t i = 0; i < events.size(); ++i) {
    const OpEvent& e = events[i];
    Row& row = rows[{e.kind, e.name}];
    row.name = e.name, row.kind = e.kind;
    row.calls += 1;
    row.total_ns += static_cast<double>(e.duration_ns);
    row.self_ns += static_cast<double>(std::max<int64_t>(0, e.duration_ns - nesting.child_ns[i]));
    if (e.kind != "cpu_op") {
      if (std::string path = launch_path.of(e); !path.empty()) {
        From& f = row.from[path];
        f.calls += 1;
        f.total_ns += static_cast<double>(e.duration_ns);
      }
    }
  }
  return rows;
}

nlohmann::json row_json(const Row& r, double key_ns, double group_ns) {
  nlohmann::json row = {
      {"name", r.name},
      {"kind", r.kind},
      {"calls", r.calls},
      {"total_us", us(r.total_ns)},
      {"self_us", us(r.self_ns)},
      {"avg_us", us(r.total_ns / static_cast<double>(std::max<int64_t>(1, r.calls)))},
      {"percent", group_ns > 0 ? std::round(key_ns / group_ns * 10000.0) / 100.0 : 0.0}};
  if (!r.from.empty()) {
    std::vector<std::pair<std::string, From>> paths(r.from.begin(), r.from.end());
    std::stable_sort(paths.begin(), paths.end(), [](const auto& a, const auto& b) {
      return a.second.total_ns > b.second.total_ns;
    });
    if (paths.size() > kFromPaths) paths.resize(kFromPaths);
    nlohmann::json from = nlohmann::json::array();
    for (const auto& [path, f] : paths) {
      from.push_back({{"path", path}, {"calls", f.calls}, {"total_us", us(f.total_ns)}});
    }
    row["from"] = std::move(from);
  }
  return row;
}

// Sorts `group` by `key`, keeps the top rows, folds the rest into one "(other)" row and
// appends them to `ops`.
void emit(std::vector<Row>& group, double Row::*key, double group_ns, const char* other_kind,
          size_t top, nlohmann::json& ops) {
  std::stable_sort(group.begin(), group.end(),
                   [&](const Row& a, const Row& b) { return a.*key > b.*key; });
  if (group.size() > top) {
    Row other{"(other)", other_kind};
    for (size_t i = top; i < group.size(); ++i) {
      other.calls += group[i].calls, other.total_ns += group[i].total_ns,
          other.self_ns += group[i].self_ns;
    }
    group.resize(top);
    group.push_back(std::move(other));
  }
  for (const Row& r : group) ops.push_back(row_json(r, r.*key, group_ns));
}

}  // namespace

nlohmann::json summarize_op_events(const std::vector<OpEvent>& events, size_t top) {
  std::vector<Row> device, cpu;
  double device_ns = 0, cpu_self_ns = 0;
  for (auto& [key, row] : aggregate(events)) {
    if (row.kind == "cpu_op") {
      cpu_self_ns += row.self_ns;
      cpu.push_back(std::move(row));
    } else {
      device_ns += row.total_ns;
      device.push_back(std::move(row));
    }
  }
  nlohmann::json ops = nlohmann::json::array();
  emit(device, &Row::total_ns, device_ns, "cuda_kernel", top, ops);
  emit(cpu, &Row::self_ns, cpu_self_ns, "cpu_op", top, ops);
  return {{"device_us", us(device_ns)}, {"cpu_self_us", us(cpu_self_ns)}, {"ops", std::move(ops)}};
}

OpProfile::OpProfile(c10::Device device, bool writer) : device_(device) {
  const char* v = std::getenv(kProfileOpsVariable);
  if (!writer || v == nullptr || *v == '\0') return;
  check_writable(v);
  check_profiler_records(device_);
  path_ = v;
}

OpProfile::~OpProfile() {
  if (!running_) return;
  try {
    tp::disableProfiler();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a failed run is already being reported
  }
}

void OpProfile::start() {
  if (!enabled() || running_) return;
  synchronize(device_);
  enable_profiler(device_);
  running_ = true;
  start_ = std::chrono::steady_clock::now();
}

void OpProfile::finish(int64_t steps) {
  if (!running_) return;
  synchronize(device_);
  const double wall_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start_).count();
  const auto result = tp::disableProfiler();
  running_ = false;
  nlohmann::json out = {{"steps", steps},
                        {"device", device_.str()},
                        {"torch", TORCH_VERSION},
                        {"total_us", us(wall_ns)}};
  out.update(summarize_op_events(collect(*result), kTopRows));
  write_file_atomically(path_, out.dump(2) + "\n");
}

}  // namespace sg::trainer
