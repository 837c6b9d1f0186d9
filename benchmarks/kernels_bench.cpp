// speedgate-kernels-bench: times the plain (ATen reference) variant and every legal
// parameter combination of each fused CUDA variant at the wam `base` shapes
// (`--micro-batch B`, default 8), forward and forward + backward, with CUDA events: median
// of 31 after 5 warm-up runs, inputs rotated over kInputSets sets (each larger than L2
// together). The ops and the timer are kernels/common/timing/ (shared with speedgate-train's
// kernel-trial command, which the controller's kernel-level trials run).
// Bandwidth is the op's minimal traffic (read inputs, write outputs once) over the median
// time, also as a fraction of the measured device-to-device copy rate. Measures; never
// asserts. Prints a Markdown table (commit it under benchmarks/results/ with the GPU,
// date and commit). `--json PATH` also writes every row as JSON: the exhaustive sweep
// that speedgate-variant-gap compares a campaign's chosen variants against.
#include "kernels/common/registry.hpp"
#include "kernels/common/timing/op_cases.hpp"
#include "kernels/common/timing/op_timer.hpp"

#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace sg::kernels;

constexpr int kInputSets = 3;
const TimerOptions kTimer;  // 5 warm-up, median of 31

struct Row {
  std::string op, variant, params;
  OpTiming t;
  double bytes;  // minimal forward traffic
};

double copy_bytes_per_s = 0;
// JSON objects of the ops measured so far (for --json).
std::vector<std::string> json_ops;

std::string json_params(const ParamValues* p) {
  std::string s = "{";
  if (p != nullptr) {
    for (const auto& [k, v] : *p)
      s += (s.size() > 1 ? ", \"" : "\"") + k + "\": " + std::to_string(v);
  }
  return s + "}";
}

void print(const std::vector<Row>& rows) {
  const double plain_fwd = rows.front().t.fwd_ms, plain_fb = rows.front().t.fwdbwd_ms;
  for (const auto& r : rows) {
    const double bw = r.bytes / (r.t.fwd_ms * 1e-3);
    std::printf("| %s | %s | %s | %.1f | %.0f | %.0f %% | %.2fx | %.1f | %.2fx |\n", r.op.c_str(),
                r.variant.c_str(), r.params.c_str(), r.t.fwd_ms * 1e3, bw / 1e9,
                100.0 * bw / copy_bytes_per_s, plain_fwd / r.t.fwd_ms, r.t.fwdbwd_ms * 1e3,
                plain_fb / r.t.fwdbwd_ms);
  }
  std::fflush(stdout);
}

void bench_op(const OpCase& op) {
  std::vector<Row> rows;
  rows.push_back({op.op, "plain_aten", "-", time_op(op, nullptr, kTimer), op.bytes});
  std::string js = "{\"op\": \"" + op.op + "\", \"family\": \"" + op.family +
                   "\", \"bytes\": " + std::to_string(op.bytes) + ", \"rows\": [";
  auto json_row = [&](const char* variant, const ParamValues* p, const OpTiming& t) {
    char times[96];
    std::snprintf(times, sizeof times, "\"fwd_us\": %.3f, \"fwdbwd_us\": %.3f", t.fwd_ms * 1e3,
                  t.fwdbwd_ms * 1e3);
    js += std::string(js.back() == '[' ? "" : ", ") + "{\"variant\": \"" + variant +
          "\", \"params\": " + json_params(p) + ", " + times + "}";
  };
  json_row("plain_aten", nullptr, rows.front().t);
  for (const auto& p : legal_params(family(op.family))) {
    const OpTiming t = time_op(op, &p, kTimer);
    rows.push_back({op.op, "fused_cuda", params_text(p), t, op.bytes});
    json_row("fused_cuda", &p, t);
  }
  json_ops.push_back(js + "]}");
  print(rows);
  auto best = std::min_element(rows.begin() + 1, rows.end(), [](const Row& a, const Row& b) {
    return a.t.fwdbwd_ms < b.t.fwdbwd_ms;
  });
  std::printf("| %s | **best** | %s | %.1f | | | %.2fx | %.1f | %.2fx |\n", op.op.c_str(),
              best->params.c_str(), best->t.fwd_ms * 1e3, rows.front().t.fwd_ms / best->t.fwd_ms,
              best->t.fwdbwd_ms * 1e3, rows.front().t.fwdbwd_ms / best->t.fwdbwd_ms);
}

}  // namespace

// {"gpu", "sm_count", "copy_gbps", "shape": {workload, size, micro_batch}, "ops": [...]}.
bool write_json(const std::string& path, const cudaDeviceProp& prop, int64_t micro_batch) {
  std::ofstream out(path + ".tmp");
  out << "{\"tool\": \"speedgate-kernels-bench\", \"gpu\": \"" << prop.name
      << "\", \"sm_count\": " << prop.multiProcessorCount
      << ", \"copy_gbps\": " << copy_bytes_per_s / 1e9
      << ", \"shape\": {\"workload\": \"wam\", \"size\": \"base\", \"micro_batch\": " << micro_batch
      << "}, \"ops\": [\n";
  for (size_t i = 0; i < json_ops.size(); ++i)
    out << "  " << json_ops[i] << (i + 1 < json_ops.size() ? ",\n" : "\n");
  out << "]}\n";
  out.close();
  return out.good() && std::rename((path + ".tmp").c_str(), path.c_str()) == 0;
}

int main(int argc, char** argv) {
  std::string json_path;
  int64_t micro_batch = 8;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json_path = argv[++i];
    } else if (std::strcmp(argv[i], "--micro-batch") == 0 && i + 1 < argc &&
               std::atoi(argv[i + 1]) > 0) {
      micro_batch = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: speedgate-kernels-bench [--json PATH] [--micro-batch B]\n");
      return 2;
    }
  }
  if (!at::cuda::is_available() || !families().front().available) {
    std::fprintf(stderr, "speedgate-kernels-bench: needs a CUDA device and a CUDA build\n");
    return 2;
  }
  const auto* prop = at::cuda::getCurrentDeviceProperties();
  copy_bytes_per_s = device_copy_rate(kTimer);
  std::printf(
      "GPU: %s (%d SMs); device-to-device copy %.0f GB/s; median of %d after %d warm-up, %d "
      "rotating input "
      "sets; wam base shapes, micro-batch %lld\n\n",
      prop->name, prop->multiProcessorCount, copy_bytes_per_s / 1e9, kTimer.repeats, kTimer.warmup,
      kInputSets, static_cast<long long>(micro_batch));
  std::printf(
      "| op | variant | params | fwd us | fwd GB/s | of copy | fwd speedup | fwd+bwd us | fwd+bwd "
      "speedup |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  KernelShape shape;  // wam base
  shape.batch = micro_batch;
  for (const auto& fam : families()) {
    for (const auto& op : op_cases(fam.name, shape, kInputSets)) bench_op(op);
  }
  if (!json_path.empty() && !write_json(json_path, *prop, micro_batch)) {
    std::fprintf(stderr, "speedgate-kernels-bench: cannot write %s\n", json_path.c_str());
    return 2;
  }
  return 0;
}
