// The resolved switch values a run uses, as one plain struct. Filled only from the
// switch table (switch_table.cpp); code reads fields, never switch names.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace sg::trainer {

struct Switches {
  // input
  bool text_cache = false;
  int64_t text_cache_entries = 256;
  bool text_miss_fast = false;
  bool context_trunc = false;
  bool fast_input = false;
  bool vae_first = false;
  // attention / layer
  std::string attn_backend = "math";
  bool fused_rope = false;
  bool fast_cat = false;
  bool fused_adaln = false;
  bool fused_qk_norm = false;
  bool cuda_graphs = false;
  // lm packing
  bool pad_to_8 = false;
  // VAE
  bool vae_fullclip = false;
  bool vae_channels_last = false;
  // memory
  int64_t ckpt_layers = -1;  // -1: every layer, 0: none, k: the first k layers
  bool mixed_attn_ckpt = false;
  bool text_encoder_offload = false;
  // scheduling
  int64_t data_workers = 1;
  bool pin_memory = false;
  bool alloc_expandable = false;
  bool numa_bind = false;
  bool no_uninit_fill = false;
  bool async_step_stats = false;
  // distributed (no-ops at world size 1)
  bool overlap_comm = false;
  int64_t bucket_mb = 25;
  bool zero1 = false;
  // Kernel-family parameter strings ("threads=128,vec=2"), by family name.
  std::map<std::string, std::string> kernel_params;
  // Every switch's env name and value as resolved (defaults included), for the result.
  std::map<std::string, std::string> resolved;
  // True when a chosen value cannot run deterministically (see the table's doc).
  bool nondeterministic = false;
};

}  // namespace sg::trainer
