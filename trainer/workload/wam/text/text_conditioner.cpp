// Text conditioning (see text_conditioner.hpp).
#include "trainer/workload/wam/text/text_conditioner.hpp"

#include <map>

namespace sg::trainer {
namespace {
constexpr int64_t kMissPadMultiple = 8;
}  // namespace

TextConditioner::TextConditioner(TextEncoder encoder, const Switches& sw, c10::Device device)
    : encoder_(std::move(encoder)),
      device_(device),
      miss_fast_(sw.text_miss_fast),
      truncate_(sw.context_trunc),
      non_blocking_(sw.fast_input) {
  if (sw.text_cache) cache_ = std::make_unique<TextCache>(sw.text_cache_entries);
  if (sw.text_encoder_offload) offload_ = std::make_unique<EncoderOffload>(*encoder_, device_);
}

at::Tensor TextConditioner::run_encoder(const at::Tensor& ids_host, const at::Tensor& mask_host) {
  torch::NoGradGuard no_grad;
  std::unique_ptr<EncoderOffload::Loaded> loaded;
  if (offload_) loaded = std::make_unique<EncoderOffload::Loaded>(*offload_);
  auto ids = ids_host.to(device_, non_blocking_ && ids_host.is_pinned());
  auto mask = mask_host.to(device_, non_blocking_ && mask_host.is_pinned());
  return encoder_->forward(ids, mask);
}

// Encodes only the distinct missing samples, on a prefix padded to a multiple of 8
// tokens; the result is padded back to the full length with zeros. Returns [M, L, d]
// for `rows` in order.
at::Tensor TextConditioner::encode_missing_fast(const at::Tensor& ids_host,
                                                const at::Tensor& mask_host,
                                                const std::vector<int64_t>& rows) {
  const int64_t full = ids_host.size(1);
  int64_t longest = 1;
  for (int64_t r : rows) longest = std::max<int64_t>(longest, mask_host[r].sum().item<int64_t>());
  const int64_t prefix =
      std::min(full, (longest + kMissPadMultiple - 1) / kMissPadMultiple * kMissPadMultiple);
  auto index = at::tensor(rows, at::kLong);
  auto ids = ids_host.index_select(0, index).narrow(1, 0, prefix).contiguous();
  auto mask = mask_host.index_select(0, index).narrow(1, 0, prefix).contiguous();
  auto out = run_encoder(ids, mask);
  if (prefix == full) return out;
  auto pad = at::zeros({out.size(0), full - prefix, out.size(2)}, out.options());
  return at::cat({out, pad}, 1);
}

TextContext TextConditioner::encode(const at::Tensor& ids_host, const at::Tensor& mask_host) {
  const int64_t b = ids_host.size(0);
  TextContext ctx;
  ctx.mask = mask_host.to(device_, non_blocking_ && mask_host.is_pinned());
  if (!cache_) {
    ctx.rows = run_encoder(ids_host, mask_host);
  } else {
    std::vector<std::string> keys(b);
    std::vector<at::Tensor> rows(b);
    std::vector<int64_t> missing;            // first row of each distinct missing key
    std::map<std::string, int64_t> pending;  // key -> index into missing
    for (int64_t i = 0; i < b; ++i) {
      keys[i] = TextCache::key(ids_host[i], mask_host[i]);
      rows[i] = cache_->find(keys[i]);
      if (!rows[i].defined() &&
          pending.emplace(keys[i], static_cast<int64_t>(missing.size())).second) {
        missing.push_back(i);
      }
    }
    if (!missing.empty()) {
      if (miss_fast_) {
        auto fresh = encode_missing_fast(ids_host, mask_host, missing);
        for (int64_t i = 0; i < b; ++i) {
          if (!rows[i].defined()) rows[i] = fresh[pending.at(keys[i])];
        }
        for (size_t m = 0; m < missing.size(); ++m)
          cache_->insert(keys[missing[m]], fresh[m].clone());
      } else {
        // The whole batch, exactly as without the cache: rows are bitwise the encoder's.
        auto fresh = run_encoder(ids_host, mask_host);
        for (int64_t i = 0; i < b; ++i) {
          if (!rows[i].defined()) rows[i] = fresh[i];
        }
        for (int64_t i : missing) cache_->insert(keys[i], fresh[i].clone());
      }
    }
    ctx.rows = at::stack(rows, 0);
  }
  int64_t keep = mask_host.size(1);
  if (truncate_) {
    keep = std::max<int64_t>(1, mask_host.sum(1).max().item<int64_t>());
    ctx.rows = ctx.rows.narrow(1, 0, keep);
    ctx.mask = ctx.mask.narrow(1, 0, keep);
  }
  ctx.all_visible = mask_host.narrow(1, 0, keep).all().item<bool>();
  return ctx;
}

}  // namespace sg::trainer
