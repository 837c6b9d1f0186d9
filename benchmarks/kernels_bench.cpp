// speedgate-kernels-bench: times the plain (ATen reference) variant and every legal
// parameter combination of each fused CUDA variant at the wam `base` shapes (micro-batch
// 8), forward and forward + backward, with CUDA events: median of kRepeats after
// kWarmup runs, inputs rotated over kInputSets sets (each larger than L2 together).
// Bandwidth is the op's minimal traffic (read inputs, write outputs once) over the median
// time, also as a fraction of the measured device-to-device copy rate. Measures; never
// asserts. Prints a Markdown table (commit it under benchmarks/results/ with the GPU,
// date and commit). `--json PATH` also writes every row as JSON: the exhaustive sweep
// that speedgate-variant-gap compares a campaign's chosen variants against.
#include "kernels/ops/kernel_ops.hpp"
#include "kernels/reference/reference_ops.hpp"
#include "kernels/registry/families.hpp"

#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

using sg::kernels::ParamValues;

constexpr int kWarmup = 5;
constexpr int kRepeats = 31;  // odd: the median is one measurement
constexpr int kInputSets = 3;

// Median milliseconds of fn(i) over kRepeats, inputs rotated by i.
double median_ms(const std::function<void(int)>& fn) {
  for (int i = 0; i < kWarmup; ++i) fn(i % kInputSets);
  auto stream = at::cuda::getCurrentCUDAStream();
  std::vector<double> ms;
  cudaEvent_t start, stop;
  C10_CUDA_CHECK(cudaEventCreate(&start));
  C10_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < kRepeats; ++i) {
    C10_CUDA_CHECK(cudaEventRecord(start, stream));
    fn(i % kInputSets);
    C10_CUDA_CHECK(cudaEventRecord(stop, stream));
    C10_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    C10_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  C10_CUDA_CHECK(cudaEventDestroy(start));
  C10_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Device-to-device copy rate in bytes/s (read + write counted), 1 GiB buffers.
double copy_rate() {
  auto opts = at::TensorOptions().dtype(at::kByte).device(at::kCUDA);
  std::vector<at::Tensor> src, dst;
  for (int i = 0; i < kInputSets; ++i) {
    src.push_back(at::empty({int64_t{1} << 30}, opts));
    dst.push_back(at::empty({int64_t{1} << 30}, opts));
  }
  const double ms = median_ms([&](int i) { dst[i].copy_(src[i]); });
  return 2.0 * double(int64_t{1} << 30) / (ms * 1e-3);
}

std::vector<ParamValues> legal_params(const sg::kernels::FamilyInfo& fam) {
  std::vector<ParamValues> out{{}};
  for (const auto& spec : fam.parameters) {
    std::vector<ParamValues> next;
    for (const auto& partial : out) {
      for (auto v : spec.values) {
        auto p = partial;
        p[spec.name] = v;
        next.push_back(p);
      }
    }
    out = next;
  }
  std::vector<ParamValues> legal;
  for (const auto& p : out) {
    if (sg::kernels::check_params(fam, p) == sg::kernels::Status::kSuccess) legal.push_back(p);
  }
  return legal;
}

std::string str(const ParamValues& p) {
  std::string s;
  for (const auto& [k, v] : p) s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return s.empty() ? "-" : s;
}

struct Row {
  std::string op, variant, params;
  double fwd_ms, fwdbwd_ms;
  double bytes;  // minimal forward traffic
};

double copy_bytes_per_s = 0;
// JSON objects of the ops measured so far (for --json).
std::vector<std::string> json_ops;

std::string json_params(const ParamValues* p) {
  std::string s = "{";
  if (p != nullptr) {
    for (const auto& [k, v] : *p) s += (s.size() > 1 ? ", \"" : "\"") + k + "\": " + std::to_string(v);
  }
  return s + "}";
}

void print(const std::vector<Row>& rows) {
  const double plain_fwd = rows.front().fwd_ms, plain_fb = rows.front().fwdbwd_ms;
  for (const auto& r : rows) {
    const double bw = r.bytes / (r.fwd_ms * 1e-3);
    std::printf("| %s | %s | %s | %.1f | %.0f | %.0f %% | %.2fx | %.1f | %.2fx |\n", r.op.c_str(), r.variant.c_str(),
                r.params.c_str(), r.fwd_ms * 1e3, bw / 1e9, 100.0 * bw / copy_bytes_per_s, plain_fwd / r.fwd_ms,
                r.fwdbwd_ms * 1e3, plain_fb / r.fwdbwd_ms);
  }
  std::fflush(stdout);
}

// One op: forward fn(inputs of set i, params) and its backward with a fixed seed grad.
using OpFn = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&, const ParamValues*)>;

void bench_op(const std::string& op, const std::string& family_name, const std::vector<std::vector<at::Tensor>>& sets,
              const OpFn& run, double bytes) {
  std::vector<Row> rows;
  auto measure = [&](const ParamValues* p) {
    std::vector<std::vector<at::Tensor>> leaves(kInputSets), seeds(kInputSets);
    for (int i = 0; i < kInputSets; ++i) {
      for (const auto& t : sets[i]) leaves[i].push_back(t.detach().requires_grad_(true));
      at::NoGradGuard no_grad;
      for (const auto& o : run(sets[i], p)) seeds[i].push_back(at::randn_like(o));
    }
    const double fwd = median_ms([&](int i) {
      at::NoGradGuard no_grad;
      run(sets[i], p);
    });
    const double fb = median_ms([&](int i) {
      auto outs = run(leaves[i], p);
      torch::autograd::grad(outs, leaves[i], seeds[i], /*retain_graph=*/false, /*create_graph=*/false,
                            /*allow_unused=*/true);
    });
    return std::make_pair(fwd, fb);
  };
  const auto [pf, pb] = measure(nullptr);
  rows.push_back({op, "plain_aten", "-", pf, pb, bytes});
  std::string js = "{\"op\": \"" + op + "\", \"family\": \"" + family_name + "\", \"bytes\": " +
                   std::to_string(bytes) + ", \"rows\": [";
  auto json_row = [&](const char* variant, const ParamValues* p, double f, double b) {
    char times[96];
    std::snprintf(times, sizeof times, "\"fwd_us\": %.3f, \"fwdbwd_us\": %.3f", f * 1e3, b * 1e3);
    js += std::string(js.back() == '[' ? "" : ", ") + "{\"variant\": \"" + variant + "\", \"params\": " +
          json_params(p) + ", " + times + "}";
  };
  json_row("plain_aten", nullptr, pf, pb);
  for (const auto& p : legal_params(sg::kernels::family(family_name))) {
    const auto [f, b] = measure(&p);
    rows.push_back({op, "fused_cuda", str(p), f, b, bytes});
    json_row("fused_cuda", &p, f, b);
  }
  json_ops.push_back(js + "]}");
  print(rows);
  auto best = std::min_element(rows.begin() + 1, rows.end(),
                               [](const Row& a, const Row& b) { return a.fwdbwd_ms < b.fwdbwd_ms; });
  std::printf("| %s | **best** | %s | %.1f | | | %.2fx | %.1f | %.2fx |\n", op.c_str(), best->params.c_str(),
              best->fwd_ms * 1e3, rows.front().fwd_ms / best->fwd_ms, best->fwdbwd_ms * 1e3,
              rows.front().fwdbwd_ms / best->fwdbwd_ms);
}

}  // namespace

// {"gpu", "sm_count", "copy_gbps", "shape": {workload, size, micro_batch}, "ops": [...]}.
bool write_json(const std::string& path, const cudaDeviceProp& prop) {
  std::ofstream out(path + ".tmp");
  out << "{\"tool\": \"speedgate-kernels-bench\", \"gpu\": \"" << prop.name << "\", \"sm_count\": "
      << prop.multiProcessorCount << ", \"copy_gbps\": " << copy_bytes_per_s / 1e9
      << ", \"shape\": {\"workload\": \"wam\", \"size\": \"base\", \"micro_batch\": 8}, \"ops\": [\n";
  for (size_t i = 0; i < json_ops.size(); ++i) out << "  " << json_ops[i] << (i + 1 < json_ops.size() ? ",\n" : "\n");
  out << "]}\n";
  out.close();
  return out.good() && std::rename((path + ".tmp").c_str(), path.c_str()) == 0;
}

int main(int argc, char** argv) {
  using namespace sg::kernels;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json_path = argv[++i];
    } else {
      std::fprintf(stderr, "usage: speedgate-kernels-bench [--json PATH]\n");
      return 2;
    }
  }
  if (!at::cuda::is_available() || fused_rope() == nullptr) {
    std::fprintf(stderr, "speedgate-kernels-bench: needs a CUDA device and a CUDA build\n");
    return 2;
  }
  const auto* prop = at::cuda::getCurrentDeviceProperties();
  copy_bytes_per_s = copy_rate();
  std::printf("GPU: %s (%d SMs); device-to-device copy %.0f GB/s; median of %d after %d warm-up, %d rotating input "
              "sets; wam base shapes, micro-batch 8\n\n",
              prop->name, prop->multiProcessorCount, copy_bytes_per_s / 1e9, kRepeats, kWarmup, kInputSets);
  std::printf("| op | variant | params | fwd us | fwd GB/s | of copy | fwd speedup | fwd+bwd us | fwd+bwd speedup |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  const auto cuda = at::TensorOptions().device(at::kCUDA);
  const int64_t b = 8, tv = 1280, ta = 16, heads = 12, hd = 128, dv = heads * hd;

  // ROPE: q/k after the fp32 RMSNorm, [8, 1280, 12, 128] float32.
  {
    auto table = rope3d_table(5, 16, 16, hd, 10000.0, at::kCUDA);
    std::vector<std::vector<at::Tensor>> sets;
    for (int i = 0; i < kInputSets; ++i) sets.push_back({at::randn({b, tv, heads, hd}, cuda)});
    const double bytes = 2.0 * sets[0][0].numel() * 4;
    bench_op("rope fp32", "ROPE", sets,
             [&](const std::vector<at::Tensor>& in, const ParamValues* p) {
               return std::vector<at::Tensor>{p ? fused_rope()->run({in[0], table}, *p) : plain_rope().run({in[0], table}, {})};
             },
             bytes);
  }
  // CAT: q/k [video; action] float32, v bf16; the attention output split bf16.
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    std::vector<std::vector<at::Tensor>> sets;
    for (int i = 0; i < kInputSets; ++i) {
      sets.push_back({at::randn({b, tv, dv}, cuda).to(dtype), at::randn({b, ta, dv}, cuda).to(dtype)});
    }
    const double bytes = 2.0 * b * (tv + ta) * dv * c10::elementSize(dtype);
    bench_op(std::string("cat ") + c10::toString(dtype), "CAT", sets,
             [&](const std::vector<at::Tensor>& in, const ParamValues* p) {
               return std::vector<at::Tensor>{p ? fused_cat()->run({in[0], in[1]}, *p) : plain_cat().run({in[0], in[1]}, {})};
             },
             bytes);
  }
  {
    std::vector<std::vector<at::Tensor>> sets;
    for (int i = 0; i < kInputSets; ++i) sets.push_back({at::randn({b, tv + ta, dv}, cuda).to(at::kBFloat16)});
    const double bytes = 2.0 * b * (tv + ta) * dv * 2;
    bench_op("split bf16", "CAT", sets,
             [&](const std::vector<at::Tensor>& in, const ParamValues* p) {
               auto [v, a] = p ? fused_cat()->split(in[0], tv, *p) : plain_cat().split(in[0], tv, {});
               return std::vector<at::Tensor>{v, a};
             },
             bytes);
  }
  // ADALN: modulate of bf16 rows under bf16 autocast (as in training) -> float32; gated
  // residual x float32 + y bf16 * gate -> float32. Modulation vectors: chunks of [B, 6, C].
  {
    std::vector<std::vector<at::Tensor>> sets;
    for (int i = 0; i < kInputSets; ++i) {
      auto mod = at::randn({b, 6, dv}, cuda).chunk(6, 1);
      sets.push_back({at::randn({b, tv, dv}, cuda).to(at::kBFloat16), mod[0], mod[1]});
    }
    const double bytes = double(b) * tv * dv * (2 + 4);
    bench_op("modulate bf16 autocast", "ADALN", sets,
             [&](const std::vector<at::Tensor>& in, const ParamValues* p) {
               at::autocast::set_autocast_enabled(at::kCUDA, true);
               at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
               AdalnArgs args{in[0], in[1], in[2], 1e-6};
               auto out = p ? fused_adaln()->run(args, *p) : plain_adaln().run(args, {});
               at::autocast::set_autocast_enabled(at::kCUDA, false);
               at::autocast::clear_cache();
               return std::vector<at::Tensor>{out};
             },
             bytes);
  }
  {
    std::vector<std::vector<at::Tensor>> sets;
    for (int i = 0; i < kInputSets; ++i) {
      auto mod = at::randn({b, 6, dv}, cuda).chunk(6, 1);
      sets.push_back({at::randn({b, tv, dv}, cuda), at::randn({b, tv, dv}, cuda).to(at::kBFloat16), mod[2]});
    }
    const double bytes = double(b) * tv * dv * (4 + 2 + 4);
    bench_op("gated fp32+bf16", "ADALN", sets,
             [&](const std::vector<at::Tensor>& in, const ParamValues* p) {
               return std::vector<at::Tensor>{p ? fused_adaln()->gated_residual(in[0], in[1], in[2], *p)
                                                : plain_adaln().gated_residual(in[0], in[1], in[2], {})};
             },
             bytes);
  }
  // QKNORM: the q/k RMSNorm of bf16 linear outputs under bf16 autocast -> float32, alone
  // (action and cross-attention q/k) and followed by the rotation (video q/k, whose plain
  // path is the plain RMSNorm then the plain float64 RoPE).
  for (bool rope : {false, true}) {
    auto table = rope3d_table(5, 16, 16, hd, 10000.0, at::kCUDA);
    std::vector<std::vector<at::Tensor>> sets;
    for (int i = 0; i < kInputSets; ++i) {
      sets.push_back({at::randn({b, tv, dv}, cuda).to(at::kBFloat16), at::randn({dv}, cuda)});
    }
    const double bytes = double(b) * tv * dv * (2 + 4);
    bench_op(rope ? "qknorm+rope bf16 autocast" : "qknorm bf16 autocast", "QKNORM", sets,
             [&](const std::vector<at::Tensor>& in, const ParamValues* p) {
               at::autocast::set_autocast_enabled(at::kCUDA, true);
               at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
               QkNormArgs args{in[0], in[1], 1e-6, rope ? table : at::Tensor(), heads};
               auto out = p ? fused_qk_norm()->run(args, *p) : plain_qk_norm().run(args, {});
               at::autocast::set_autocast_enabled(at::kCUDA, false);
               at::autocast::clear_cache();
               return std::vector<at::Tensor>{out};
             },
             bytes);
  }
  if (!json_path.empty() && !write_json(json_path, *prop)) {
    std::fprintf(stderr, "speedgate-kernels-bench: cannot write %s\n", json_path.c_str());
    return 2;
  }
  return 0;
}
