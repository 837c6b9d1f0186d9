// AdamW with optional ZeRO-1 sharding (see sharded_adamw.hpp).
#include "trainer/distributed/sharded_adamw.hpp"

#include "trainer/optim/adamw_util.hpp"
#include "trainer/result/digest.hpp"

#include <torch/torch.h>
#include <torch/version.h>

namespace sg::trainer {

std::vector<int> shard_owners(const std::vector<int64_t>& numels, int world_size) {
  int64_t total = 0;
  for (int64_t n : numels) total += n;
  std::vector<int> owner;
  int64_t before = 0;
  for (int64_t n : numels) {
    const int64_t r = total > 0 ? before * world_size / total : 0;
    owner.push_back(static_cast<int>(std::min<int64_t>(r, world_size - 1)));
    before += n;
  }
  return owner;
}

ShardedAdamW::ShardedAdamW(std::vector<at::Tensor> params,
                           const torch::optim::AdamWOptions& options, Communicator* comm,
                           bool shard)
    : params_(std::move(params)),
      comm_(comm),
      sharded_(shard && comm != nullptr && comm->world_size() > 1) {
  std::vector<int64_t> numels;
  for (const auto& p : params_) numels.push_back(p.numel());
  owner_ =
      sharded_ ? shard_owners(numels, comm_->world_size()) : std::vector<int>(params_.size(), 0);
  std::vector<at::Tensor> mine;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!sharded_ || owner_[i] == comm_->rank()) mine.push_back(params_[i]);
    TORCH_CHECK(!sharded_ || params_[i].scalar_type() == params_.front().scalar_type(),
                "ZERO1 needs one parameter dtype");
  }
  optim_ = std::make_unique<torch::optim::AdamW>(mine, options);
}

void ShardedAdamW::step() {
  optim_->step();
  if (!sharded_) return;
  torch::NoGradGuard no_grad;
  for (int r = 0; r < comm_->world_size(); ++r) {
    std::vector<at::Tensor> run;
    int64_t numel = 0;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (owner_[i] != r) continue;
      run.push_back(params_[i]);
      numel += params_[i].numel();
    }
    if (run.empty()) continue;
    at::Tensor flat;
    if (r == comm_->rank()) {
      std::vector<at::Tensor> pieces;
      for (const auto& p : run) pieces.push_back(p.detach().reshape(-1));
      flat = at::cat(pieces);
    } else {
      flat = at::empty({numel}, run.front().options().requires_grad(false));
    }
    comm_->broadcast(flat, r);
    if (r == comm_->rank()) continue;
    int64_t offset = 0;
    for (const auto& p : run) {
      p.detach().copy_(flat.narrow(0, offset, p.numel()).view(p.sizes()));
      offset += p.numel();
    }
  }
}

int64_t ShardedAdamW::local_state_bytes() const {
  int64_t bytes = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (sharded_ && owner_[i] != comm_->rank()) continue;
    if (const auto* s = adam_state(*optim_, params_[i])) {
      bytes += 2 * s->exp_avg().numel() * static_cast<int64_t>(s->exp_avg().element_size());
    }
  }
  return bytes;
}

std::string ShardedAdamW::state_digest(
    const std::vector<std::pair<std::string, at::Tensor>>& named) {
  TORCH_CHECK(named.size() == params_.size(), "state_digest: names do not match the parameters");
  torch::NoGradGuard no_grad;
  Digest d;
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string& name = named[i].first;
    const at::Tensor& p = params_[i];
    const bool mine = !sharded_ || owner_[i] == comm_->rank();
    const auto* s = mine ? adam_state(*optim_, p) : nullptr;
    at::Tensor exp_avg = s != nullptr ? s->exp_avg() : at::Tensor();
    at::Tensor exp_avg_sq = s != nullptr ? s->exp_avg_sq() : at::Tensor();
    int64_t step = s != nullptr ? s->step() : 0;
    bool has_state = s != nullptr;
    if (sharded_) {
      // The owner sends [has_state, step], then both moments, to every rank.
      at::Tensor header = at::zeros({2}, p.options().dtype(at::kLong).requires_grad(false));
      if (mine) header.copy_(at::tensor({int64_t{has_state}, step}, at::kLong));
      comm_->broadcast(header, owner_[i]);
      const auto h = header.to(at::kCPU);
      has_state = h[0].item<int64_t>() != 0;
      step = h[1].item<int64_t>();
      if (has_state) {
        if (!mine) {
          exp_avg = at::empty_like(p).requires_grad_(false);
          exp_avg_sq = at::empty_like(p).requires_grad_(false);
        }
        comm_->broadcast(exp_avg, owner_[i]);
        comm_->broadcast(exp_avg_sq, owner_[i]);
      }
    }
    if (!has_state) {
      d.add_string(name + ":no_state");
      continue;
    }
    d.add_int(step);
    d.add_tensor(name + ".exp_avg", exp_avg);
    d.add_tensor(name + ".exp_avg_sq", exp_avg_sq);
  }
  return d.hex();
}

}  // namespace sg::trainer
