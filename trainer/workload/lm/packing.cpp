// Packing and collation (see packing.hpp).
#include "trainer/workload/lm/packing.hpp"

#include "trainer/runtime/seed.hpp"
#include "trainer/workload/lm/tokenizer.hpp"

#include <algorithm>

namespace sg::trainer {

PackedRows::PackedRows(const Corpus& corpus, int64_t seq_len, uint64_t seed)
    : corpus_(corpus), seq_len_(seq_len), seed_(seed) {}

PackedRow PackedRows::row(int64_t index) const {
  const auto& docs = corpus_.documents;
  const size_t capacity = static_cast<size_t>(seq_len_ + 1);
  size_t d = static_cast<size_t>(mix_seed(seed_, static_cast<uint64_t>(index)) % docs.size());
  PackedRow r;
  for (int64_t n = 0;; ++n, d = (d + 1) % docs.size()) {
    const auto& doc = docs[d];
    const size_t need = doc.size() + 1;  // + end of document
    if (n == 0 && need > capacity) {     // a long first document: truncated, fills the row
      r.tokens.assign(doc.begin(), doc.begin() + static_cast<std::ptrdiff_t>(capacity));
      r.doc.assign(capacity, 0);
      break;
    }
    if (r.tokens.size() + need > capacity) break;
    r.tokens.insert(r.tokens.end(), doc.begin(), doc.end());
    r.tokens.push_back(kEosId);
    r.doc.insert(r.doc.end(), need, n);
  }
  return r;
}

LmBatch collate(const std::vector<PackedRow>& rows, bool pad_to_8) {
  const auto b = static_cast<int64_t>(rows.size());
  int64_t len = 0;
  for (const auto& r : rows)
    len = std::max<int64_t>(len, static_cast<int64_t>(r.tokens.size()) - 1);
  if (pad_to_8) len = (len + 7) / 8 * 8;
  auto inputs = at::full({b, len}, kPadId, at::kLong);
  auto targets = at::full({b, len}, kPadId, at::kLong);
  auto mask = at::zeros({b, len}, at::kBool);
  auto docs = at::full({b, len}, int64_t{-1}, at::kLong);
  auto in_a = inputs.accessor<int64_t, 2>();
  auto tg_a = targets.accessor<int64_t, 2>();
  auto mk_a = mask.accessor<bool, 2>();
  auto dc_a = docs.accessor<int64_t, 2>();
  int64_t real = 0;
  for (int64_t i = 0; i < b; ++i) {
    const auto& r = rows[static_cast<size_t>(i)];
    const auto n = static_cast<int64_t>(r.tokens.size()) - 1;
    for (int64_t p = 0; p < n; ++p) {
      const auto sp = static_cast<size_t>(p);
      in_a[i][p] = r.tokens[sp];
      dc_a[i][p] = r.doc[sp];
      if (r.doc[sp + 1] == r.doc[sp]) {
        tg_a[i][p] = r.tokens[sp + 1];
        mk_a[i][p] = true;
        ++real;
      }
    }
  }
  return {inputs, targets, mask, docs, real, len};
}

LmBatch make_batch(const PackedRows& rows, int64_t first_index, int64_t count, bool pad_to_8,
                   c10::Device device) {
  std::vector<PackedRow> picked;
  for (int64_t i = 0; i < count; ++i) picked.push_back(rows.row(first_index + i));
  LmBatch batch = collate(picked, pad_to_8);
  if (device.is_cpu()) return batch;
  batch.inputs = batch.inputs.to(device);
  batch.targets = batch.targets.to(device);
  batch.loss_mask = batch.loss_mask.to(device);
  batch.doc_ids = batch.doc_ids.to(device);
  return batch;
}

}  // namespace sg::trainer
