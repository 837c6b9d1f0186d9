// The switch registry (see switch_table.hpp). The only place that names switches.
#include "trainer/switches/switch_table.hpp"

#include "kernels/common/registry.hpp"
#include "trainer/test_mutants.hpp"

#include <torch/cuda.h>
#include <torch/version.h>

namespace sg::trainer {
namespace {

#if SPEEDGATE_WITH_CUDA
constexpr bool kCuda = true;
#else
constexpr bool kCuda = false;
#endif
constexpr bool kTorch2 = TORCH_VERSION_MAJOR >= 2;
// Deterministic mode fills uninitialised memory from LibTorch 2.1 on (NO_UNINIT_FILL).
constexpr bool kFillUninitialized = TORCH_VERSION_MAJOR > 2 ||
                                    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1);

// A CUDA build on a machine without a usable GPU runs on the CPU: CUDA-only switches are
// unavailable there too.
bool gpu_present() {
  static const bool present = kCuda && torch::cuda::is_available();
  return present;
}

std::string cuda_only(const char* what) {
  if (!kCuda) return std::string("CUDA only (") + what + "); this build has no CUDA";
  return gpu_present() ? ""
                       : std::string("CUDA only (") + what + "); no GPU visible on this machine";
}

std::string kernel_reason(const char* family) {
  const auto& fam = sg::kernels::family(family);
  if (!fam.available) return fam.unavailable_reason;
  return gpu_present() ? "" : "fused CUDA kernel; no GPU visible on this machine";
}

// SwitchSpec::apply: stores a validated value; to(field) stores it into that field.
using Apply = std::function<void(Switches&, const std::string&)>;

Apply to(bool Switches::*field) {
  return [field](Switches& s, const std::string& v) { s.*field = v == "1"; };
}
Apply to(int64_t Switches::*field) {
  return [field](Switches& s, const std::string& v) { s.*field = std::stoll(v); };
}
Apply to(std::string Switches::*field) {
  return [field](Switches& s, const std::string& v) { s.*field = v; };
}

// What every switch states; its type, domain and default are set by the caller.
SwitchSpec described(const char* name, Identity identity, Effect effect,
                     std::vector<std::string> requires, std::string doc, Apply apply) {
  SwitchSpec s;
  s.name = name;
  s.requires = std::move(requires);
  s.identity = identity;
  s.effect = effect;
  s.doc = std::move(doc);
  s.apply = std::move(apply);
  return s;
}

SwitchSpec flag(const char* name, Identity identity, Effect effect,
                std::vector<std::string> requires, std::string doc, Apply apply,
                std::string unavailable = "") {
  SwitchSpec s =
      described(name, identity, effect, std::move(requires), std::move(doc), std::move(apply));
  s.type = SwitchType::kBool;
  s.values = {"0", "1"};
  s.default_value = "0";
  s.unavailable_reason = std::move(unavailable);
  return s;
}

SwitchSpec integer(const char* name, int64_t min, int64_t max, std::vector<std::string> candidates,
                   const char* def, Identity identity, Effect effect,
                   std::vector<std::string> requires, std::string doc, Apply apply) {
  SwitchSpec s =
      described(name, identity, effect, std::move(requires), std::move(doc), std::move(apply));
  s.type = SwitchType::kInt;
  s.min = min;
  s.max = max;
  s.values = std::move(candidates);
  s.default_value = def;
  return s;
}

// A switch read by other code than wam's own.
SwitchSpec in_scope(SwitchScope scope, SwitchSpec s) {
  s.scope = scope;
  return s;
}
// A data-parallel switch: it does nothing on fewer than two ranks.
SwitchSpec data_parallel(SwitchSpec s) {
  s.min_world_size = 2;
  return s;
}

std::vector<SwitchSpec> build_table() {
  using I = Identity;
  using E = Effect;
  std::vector<SwitchSpec> t;
  // ---- input pipeline ----
  t.push_back(
      flag("TEXT_CACHE", I::kBitwise, E::kSpeed, {},
           "Bounded LRU cache of the frozen text encoder's output rows, keyed by each sample's "
           "token ids and mask, filled during training. On a miss the whole batch is encoded "
           "exactly as without the cache, so cached rows are bitwise the encoder's.",
           to(&Switches::text_cache)));
  t.push_back(integer("TEXT_CACHE_ENTRIES", 1, 65536, {"8", "64", "256"}, "256", I::kBitwise,
                      E::kMemory, {"TEXT_CACHE=1"},
                      "Capacity of the text cache in rows (least recently used row is evicted).",
                      to(&Switches::text_cache_entries)));
  t.push_back(
      flag("TEXT_MISS_FAST", I::kTolerance, E::kSpeed, {"TEXT_CACHE=1"},
           "On a cache miss encode only the distinct missing prompts, on a prefix padded to a "
           "multiple of 8 tokens instead of the full context length. Same function, other GEMM "
           "shapes, so rounding can differ.",
           to(&Switches::text_miss_fast)));
  t.push_back(
      flag("CONTEXT_TRUNC", I::kTolerance, E::kSpeed, {"TEXT_CACHE=1"},
           "Drop the all-padding tail of the text context before the cross-attentions (those "
           "positions are masked anyway). Shorter reductions, so rounding can differ.",
           to(&Switches::context_trunc)));
  t.push_back(flag(
      "FAST_INPUT", I::kBitwise, E::kSpeed, {},
      "Collate frames into one uint8 clip tensor in the loader workers and convert it on the "
      "device in one batch with the same ops in the same order (instead of per-frame float "
      "conversion on the host and a blocking float copy); small host tensors go through "
      "non-blocking copies, the flow-matching noise through pinned memory (a blocking copy from "
      "pageable memory waits for the device to drain); the RoPE table is memoized per device.",
      to(&Switches::fast_input)));
  t.push_back(flag(
      "VAE_FIRST", I::kBitwise, E::kSchedule, {},
      "Queue the VAE encode before the text encode so cache lookups overlap the VAE on the GPU.",
      to(&Switches::vae_first)));
  // ---- attention / layer kernels ----
  {
    SwitchSpec s = described(
        "ATTN_BACKEND", I::kTolerance, E::kSpeed, {},
        "Attention implementation: math (explicit matmul/softmax, the default) or "
        "scaled_dot_product_attention restricted to the memory-efficient, flash (unmasked calls; "
        "masked calls fall back to memory-efficient) or cuDNN kernel. Other kernels round "
        "differently; efficient/flash/cudnn backward is not deterministic, so a run with them "
        "relaxes deterministic mode to warn-only (recorded in the fingerprint).",
        to(&Switches::attn_backend));
    s.type = SwitchType::kEnum;
    s.values = {"math", "efficient", "flash", "cudnn"};
    s.default_value = "math";
    s.deterministic = false;
    s.scope = SwitchScope::kLayers;
    s.unavailable_reason =
        kCuda && kTorch2 && gpu_present()
            ? ""
            : "needs a GPU, a CUDA build and LibTorch >= 2.0 (only math runs here)";
    t.push_back(s);
  }
  t.push_back(
      in_scope(SwitchScope::kLayers,
               flag("FUSED_ROPE", I::kBitwise, E::kSpeed, {},
                    "Fused RoPE kernel (kernel family ROPE) with the float64 products and rounding "
                    "steps of the reference rotation; table-driven, so it runs wam's 3-D RoPE and "
                    "lm's 1-D RoPE alike.",
                    to(&Switches::fused_rope), kernel_reason("ROPE"))));
  t.push_back(
      flag("FAST_CAT", I::kBitwise, E::kSpeed, {},
           "Joint [video; action] q/k/v concatenation and attention-output split as one row-copy "
           "kernel each (kernel family CAT).",
           to(&Switches::fast_cat), kernel_reason("CAT")));
  t.push_back(
      flag("FUSED_ADALN", I::kBitwise, E::kSpeed, {},
           "Fused AdaLN layer-norm + modulate and gated-residual chains, and the linear layers' "
           "bias add (F::linear's in-place add of a float32 bias to the bf16 matmul output, one "
           "vectorised pass instead of ATen's casting loop), keeping the op order (kernel family "
           "ADALN).",
           to(&Switches::fused_adaln), kernel_reason("ADALN")));
  // Tolerance, measured: on the H200 (2026-11-30) wam `small` with it on kept every step's
  // loss and grad-norm bits but not the optimizer-state digest
  // (GpuIdentity.EverySwitchAgainstDefault), so some norm-weight gradient is summed in another
  // order than autograd's. Bitwise again only when that test passes.
  t.push_back(flag(
      "FUSED_QK_NORM", I::kTolerance, E::kSpeed, {},
      "Fused q/k RMSNorm (kernel family QKNORM): the elementwise chains in one pass each around "
      "ATen's own row reductions, forward and backward; with FUSED_ROPE also on, the video q/k "
      "norm and rotation are one pass. Tolerance: the norm weights' gradients are not bitwise "
      "the plain path's (measured on an H200).",
      to(&Switches::fused_qk_norm), kernel_reason("QKNORM")));
  t.push_back(in_scope(
      SwitchScope::kLayers,
      flag("CUDA_GRAPHS", I::kBitwise, E::kSpeed, {},
           "Replay each layer that CKPT_LAYERS leaves un-checkpointed (wam: MoT layers, lm: "
           "decoder blocks) from per-layer CUDA graphs (forward and backward captured per "
           "input shape, like make_graphed_callables): fewer kernel launches, same kernels, "
           "so bitwise. Checkpointed layers run as before, so it pays only with "
           "CKPT_LAYERS=0 or k < layers (no effect at the default -1). Costs memory: each "
           "graphed layer keeps its activations and buffers for up to 4 input shapes. "
           "With MIXED_ATTN_CKPT on (wam), no layer is graphed (a graphed layer cannot "
           "checkpoint inside).",
           to(&Switches::cuda_graphs),
           !kCuda || kTorch2 ? cuda_only("CUDA graph capture")
                             : "needs LibTorch >= 2.0 (CUDA graph capture API)")));
  // ---- lm packing ----
  t.push_back(
      in_scope(SwitchScope::kLmPacking,
               flag("PAD_TO_8", I::kTolerance, E::kSpeed, {},
                    "Pad each packed lm batch to a multiple of 8 positions (instead of its longest "
                    "row) so GEMMs get tensor-core-friendly shapes. Padding is masked out of "
                    "attention and the loss, so the real tokens are the same; other shapes, so "
                    "rounding can differ.",
                    to(&Switches::pad_to_8))));
  // ---- VAE encode ----
  t.push_back(
      flag("VAE_FULLCLIP", I::kTolerance, E::kSpeed, {},
           "Encode each clip in one pass instead of chunk by chunk (first frame, then 4-frame "
           "chunks with cached frames). Same function, other conv shapes, so rounding can differ.",
           to(&Switches::vae_fullclip)));
  t.push_back(
      flag("VAE_CHANNELS_LAST", I::kTolerance, E::kSpeed, {},
           "Run the VAE's 3-D convolutions channels-last (ChannelsLast3d) and return latents in "
           "the default contiguous layout. Other conv algorithms, so rounding can differ.",
           to(&Switches::vae_channels_last)));
  // ---- memory ----
  t.push_back(in_scope(
      SwitchScope::kLayers,
      integer("CKPT_LAYERS", -1, 64, {"-1", "0", "4", "8", "16"}, "-1", I::kBitwise, E::kMemory, {},
              "Activation checkpointing (recompute in backward) of the first k layers (wam: "
              "MoT layers, lm: decoder blocks); -1 (the default) checkpoints every layer, 0 "
              "none. Recompute reproduces the forward exactly.",
              to(&Switches::ckpt_layers))));
  t.push_back(
      flag("MIXED_ATTN_CKPT", I::kBitwise, E::kMemory, {},
           "In layers not checkpointed as a whole, checkpoint the joint [video; action] attention "
           "(q/k/v projections through the output projections) on its own.",
           to(&Switches::mixed_attn_ckpt)));
  t.push_back(
      flag("TEXT_ENCODER_OFFLOAD", I::kBitwise, E::kMemory, {"TEXT_CACHE=1"},
           "Keep the frozen text encoder's weights in one (pinned, on CUDA) host buffer and copy "
           "them to the device only for a step with a text-cache miss; the device copy is freed "
           "afterwards. Same weights and kernels, so rows are bitwise the same.",
           to(&Switches::text_encoder_offload)));
  // ---- scheduling ----
  t.push_back(
      integer("DATA_WORKERS", 0, 16, {"0", "1", "2", "4"}, "1", I::kBitwise, E::kSchedule, {},
              "Background loader threads producing batches (0: produce on the training thread). "
              "Batches depend only on the seed and batch index, never on the worker count.",
              to(&Switches::data_workers)));
  t.push_back(
      flag("PIN_MEMORY", I::kBitwise, E::kSchedule, {},
           "Loader workers allocate host batches in pinned memory so copies can be asynchronous.",
           to(&Switches::pin_memory), cuda_only("pinned host memory")));
  t.push_back(
      in_scope(SwitchScope::kRuntime,
               flag("ALLOC_EXPANDABLE", I::kBitwise, E::kMemory, {},
                    "CUDA caching allocator with expandable segments (less fragmentation); set "
                    "before the first CUDA allocation.",
                    to(&Switches::alloc_expandable), cuda_only("CUDA caching allocator setting"))));
  t.push_back(
      in_scope(SwitchScope::kRuntime,
               flag("NUMA_BIND", I::kBitwise, E::kSchedule, {},
                    "Bind the process (training thread, loader workers) to the CPU cores of its "
                    "GPU's NUMA node (the PCI device's local_cpulist) before any worker starts.",
                    to(&Switches::numa_bind), cuda_only("binds to the GPU's NUMA node"))));
  t.push_back(in_scope(
      SwitchScope::kRuntime,
      flag("NO_UNINIT_FILL", I::kBitwise, E::kSpeed, {},
           "Deterministic mode stays on, but without its fill of uninitialised memory: "
           "LibTorch >= 2.1 fills every new tensor with NaN (integers: their max) so that "
           "a read of uninitialised memory is reproducible. Code that never reads it "
           "computes the same bits without the fill, and the fill costs a kernel per "
           "allocation (on the H200 at micro-batch 32, fast.env: ~6,000 fills, ~95 ms of "
           "a 1.37 s step).",
           to(&Switches::no_uninit_fill),
           kFillUninitialized ? "" : "LibTorch < 2.1 does not fill uninitialised memory")));
  t.push_back(
      flag("ASYNC_STEP_STATS", I::kBitwise, E::kSchedule, {},
           "Keep each step's loss and gradient norm on the device and read them one step later "
           "through a non-blocking copy (instead of a device sync per micro-batch's loss, like "
           "loss.item(), and one "
           "for the gradient norm), "
           "so the host queues the next step while the device runs this one. The same float "
           "additions on the device instead of the host; a non-finite loss is reported one step "
           "later.",
           to(&Switches::async_step_stats)));
  // ---- distributed data parallel (WORLD_SIZE > 1; no-ops on one rank) ----
  t.push_back(data_parallel(flag(
      "OVERLAP_COMM", I::kBitwise, E::kSchedule, {},
      "Start each gradient bucket's all-reduce as soon as its gradients are ready during the "
      "last micro-batch's backward (post hooks on the gradient accumulators; NCCL's own stream, "
      "Gloo's worker threads) instead of after backward. Same flat buckets reduced the same way, "
      "so bitwise. No effect at world size 1.",
      to(&Switches::overlap_comm))));
  t.push_back(data_parallel(integer(
      "BUCKET_MB", 0, 1024, {"0", "4", "25", "100"}, "25", I::kTolerance, E::kSchedule, {},
      "Gradient all-reduce bucket size in MiB (parameters in reverse registration order packed "
      "into buckets of at most this size; 0: one bucket per parameter). Bitwise at 2 ranks (every "
      "element is one sum of two "
      "operands); with more ranks the collective's chunking, and so the summation order of an "
      "element, can depend on the bucket, hence tolerance. No effect at world size 1.",
      to(&Switches::bucket_mb))));
  t.push_back(data_parallel(flag(
      "ZERO1", I::kBitwise, E::kMemory, {},
      "ZeRO stage 1: AdamW state sharded across ranks (each keeps exp_avg/exp_avg_sq for a "
      "contiguous run of parameters, updates only those with LibTorch's AdamW and broadcasts "
      "them). Per-parameter math unchanged, so bitwise; optimizer memory / world size. No effect "
      "at world size 1.",
      to(&Switches::zero1))));
  add_test_mutant_switches(
      t);  // test-only, with SPEEDGATE_TEST_MUTANTS (docs/protocol.md section 4)
  return t;
}

}  // namespace

const std::vector<SwitchSpec>& switch_table() {
  static const std::vector<SwitchSpec> kTable = build_table();
  return kTable;
}

const SwitchSpec* find_switch(const std::string& name) {
  for (const auto& s : switch_table()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const char* to_string(SwitchType type) {
  switch (type) {
    case SwitchType::kBool:
      return "bool";
    case SwitchType::kInt:
      return "int";
    case SwitchType::kEnum:
      return "enum";
  }
  return "?";
}
const char* to_string(Identity identity) {
  return identity == Identity::kBitwise ? "bitwise" : "tolerance";
}
const char* to_string(Effect effect) {
  switch (effect) {
    case Effect::kSpeed:
      return "speed";
    case Effect::kMemory:
      return "memory";
    case Effect::kSchedule:
      return "schedule";
  }
  return "?";
}

}  // namespace sg::trainer
