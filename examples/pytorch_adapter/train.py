#!/usr/bin/python3
"""A small real PyTorch trainer made tunable with the speedgate_trainer library.

    train.py describe --json
    train.py run --workload cnn --size tiny --steps 8 --seed 0 --micro-batch 16 \
                 --grad-accum 1 --result out.json [--preset FILE] [--heartbeat PATH] \
                 [--threads T] [--warmup-steps K] [--eval-batches E] [--perturb EPS]

Workload "cnn": a small convolutional classifier trained with AdamW on a deterministic
synthetic image dataset synthesised in-process (no files, no downloads). The protocol
(docs/protocol.md) is the library's job (python/speedgate_trainer); this file holds the
switch table, the model, the data and the training loop.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import speedgate_trainer as sg  # noqa: E402

# The switch table. `identity` was measured, not assumed (README, "Classifying a switch");
# test_train.py re-checks every class.
SWITCHES = [
    sg.Switch("DATA_CACHE", identity="bitwise", effect="speed",
              doc="Keep each synthesised training/eval sample (the expensive render + blur + "
                  "downsample) in memory after first use instead of re-synthesising it every "
                  "epoch. Samples are pure functions of their index, so the bytes are equal."),
    sg.Switch("CACHE_LIMIT", type="int", min=0, max=1048576, values=["0", "32", "128"],
              default="0", requires=["DATA_CACHE=1"], identity="bitwise", effect="memory",
              doc="Upper bound on cached samples (0 = unbounded); least recently used samples "
                  "are evicted and re-synthesised when needed again. Trades speed for memory."),
    sg.Switch("CHANNELS_LAST", identity="tolerance", effect="speed",
              doc="Run the conv stack in torch.channels_last (NHWC) memory format; oneDNN picks "
                  "other convolution kernels, so rounding differs from NCHW."),
    sg.Switch("FOREACH_OPTIM", identity="bitwise", effect="speed",
              doc="AdamW(foreach=True): multi-tensor optimizer step (one kernel launch per op "
                  "for all parameters) instead of a per-parameter loop. Same element-wise math."),
]

# Test-only switches for the gate's mutation suite (README, "Mutants"): listed only with
# SPEEDGATE_ADAPTER_MUTANTS=1, so no user's manifest, search or preset ever sees them.
# Recipe mutants and rounding switches are all declared `tolerance`; the docs say which kind.
MUTANT_KINDS = [
    ("bitwise", "test-only: ", [
        ("NOOP_A", "does nothing"),
        ("NOOP_B", "does nothing"),
        ("NOOP_C", "does nothing"),
    ]),
    ("tolerance", "test-only recipe mutant: ", [
        ("MUT_LR_3", "learning rate x1.03"),
        ("MUT_LR_10", "learning rate x1.10"),
        ("MUT_WEIGHT_DECAY", "weight decay x2"),
        ("MUT_BETA2", "Adam beta2 0.999 -> 0.99"),
        ("MUT_CLIP", "gradient clipping at 0.5, below most steps' norms"),
        ("MUT_DROP_POSITIONS", "the last 1/8 of each micro-batch's samples leave the loss"),
        ("MUT_WARMUP", "linear LR warm-up over 2 steps"),
        ("MUT_LABEL_SMOOTH", "label smoothing 0.05"),
    ]),
    ("tolerance", "test-only rounding switch: ", [
        ("ROUND_BF16_AUTOCAST", "bf16 autocast forward"),
        ("ROUND_EINSUM_HEAD", "classifier head summed by torch.einsum, not F.linear"),
    ]),
    ("bitwise", "test-only speedup: ", [
        ("SKIP_REDUNDANT",
         "skip a redundant no-grad forward that the default runs every micro-batch"),
    ]),
]
MUTANTS = [sg.Switch(name, identity=identity, effect="speed", doc=kind + what)
           for identity, kind, rows in MUTANT_KINDS for name, what in rows]
if os.environ.get("SPEEDGATE_ADAPTER_MUTANTS") == "1":
    SWITCHES = SWITCHES + MUTANTS

WORKLOAD = "cnn"
NUM_CLASSES = 10
DATA_SEED = 20240917          # the dataset is fixed; --seed varies init and order
EVAL_OFFSET = 1 << 30         # eval samples live at indices >= EVAL_OFFSET
LR, WEIGHT_DECAY, BETAS, CLIP = 2e-3, 0.01, (0.9, 0.999), 5.0
# Grad norms here are 0.4-1.1, so CLIP (and half of it) never clips: MUT_CLIP clips at 0.5.
MUT_CLIP_THRESHOLD = 0.5
# SKIP_REDUNDANT=0 runs a no-grad forward of B // 3 samples per micro-batch: about 8-10 %
# of a tiny step's CPU time at micro-batch 32, one thread (benchmarks/results/gate_speed.md).
REDUNDANT_DIVISOR = 3
SIZES = {
    # image: side of the square RGB input; c1/c2: conv widths; hidden: MLP width;
    # train_samples: dataset length (epochs recur quickly so the cache matters).
    "tiny": {"image": 16, "c1": 16, "c2": 32, "hidden": 64, "train_samples": 64,
             "default_micro_batch": 16},
    "small": {"image": 32, "c1": 32, "c2": 64, "hidden": 128, "train_samples": 128,
              "default_micro_batch": 32},
}


def build_model(torch, cfg):
    nn = torch.nn
    side = cfg["image"] // 4
    return nn.Sequential(
        nn.Conv2d(3, cfg["c1"], 3, padding=1), nn.ReLU(),
        nn.Conv2d(cfg["c1"], cfg["c1"], 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(cfg["c1"], cfg["c2"], 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(cfg["c2"] * side * side, cfg["hidden"]), nn.ReLU(),
        nn.Linear(cfg["hidden"], NUM_CLASSES),
    )


def train_flops_per_sample(cfg):
    """3 x (2 x multiply-adds) of the convs and linears: forward + backward."""
    s, c1, c2, h = cfg["image"], cfg["c1"], cfg["c2"], cfg["hidden"]
    conv = lambda cin, cout, side: 2 * cin * cout * 9 * side * side  # noqa: E731
    flops = conv(3, c1, s) + conv(c1, c1, s) + conv(c1, c2, s // 2)
    return 3 * (flops + 2 * c2 * (s // 4) ** 2 * h + 2 * h * NUM_CLASSES)


def describe_size(name, cfg):
    import torch
    return sg.size_info(build_model(torch, cfg), train_flops_per_sample(cfg),
                        tokens_per_sample=1, default_micro_batch=cfg["default_micro_batch"])


class Dataset:
    """Synthetic labelled images. Sample i is a pure function of i: a class prototype,
    randomly shifted and noised at 2x resolution, blurred, downsampled, normalised.
    That synthesis is the per-step data cost that SG_DATA_CACHE removes."""

    def __init__(self, torch, cfg, cache, cache_limit):
        self.torch, self.cfg = torch, cfg
        self.cache = {} if cache else None
        self.cache_limit = cache_limit
        self.counters = {"cache_hits": 0, "cache_misses": 0, "cache_evictions": 0}
        g = torch.Generator().manual_seed(DATA_SEED)
        hi = 2 * cfg["image"]
        self.prototypes = torch.randn(NUM_CLASSES, 3, hi, hi, generator=g)
        k = torch.arange(7, dtype=torch.float32) - 3
        k = torch.exp(-k * k / 4.0)
        k = (k[:, None] * k[None, :]) / (k.sum() ** 2)
        self.blur = k.expand(3, 1, 7, 7).contiguous()

    def cached_bytes(self):
        return sum(x.numel() * x.element_size() for x, _ in (self.cache or {}).values())

    def synthesise(self, index):
        torch, F = self.torch, self.torch.nn.functional
        g = torch.Generator().manual_seed(DATA_SEED * 1000003 + index)
        label = int(torch.randint(NUM_CLASSES, (1,), generator=g))
        dy, dx = (int(v) for v in torch.randint(-4, 5, (2,), generator=g))
        img = torch.roll(self.prototypes[label], shifts=(dy, dx), dims=(1, 2))
        img = img + 0.8 * torch.randn(img.shape, generator=g)
        img = F.conv2d(img.unsqueeze(0), self.blur, padding=3, groups=3)
        img = F.avg_pool2d(img, 2).squeeze(0)
        img = (img - img.mean()) / (img.std() + 1e-5)
        return img.contiguous(), label

    def sample(self, index):
        if self.cache is None:
            return self.synthesise(index)
        hit = self.cache.pop(index, None)          # pop + re-insert = LRU order
        if hit is not None:
            self.counters["cache_hits"] += 1
        else:
            self.counters["cache_misses"] += 1
            hit = self.synthesise(index)
            while self.cache_limit and len(self.cache) >= self.cache_limit:
                self.cache.pop(next(iter(self.cache)))
                self.counters["cache_evictions"] += 1
        self.cache[index] = hit
        return hit

    def batch(self, indices):
        xs, ys = zip(*(self.sample(i) for i in indices))
        return self.torch.stack(xs), self.torch.tensor(ys, dtype=self.torch.int64)


class Order:
    """Sample order: a fresh permutation of the training set per epoch, seeded by
    (seed, epoch). Position p of the global stream is the same sample whatever the
    micro-batch / accumulation split, so GAS=2 x B and GAS=1 x 2B see equal data."""

    def __init__(self, torch, n, seed):
        self.torch, self.n, self.seed, self.perms = torch, n, seed, {}

    def __call__(self, position):
        epoch, offset = divmod(position, self.n)
        if epoch not in self.perms:
            g = self.torch.Generator().manual_seed(self.seed * 7919 + epoch)
            self.perms = {epoch: self.torch.randperm(self.n, generator=g).tolist()}
        return self.perms[epoch][offset]


def make_forward(torch, ctx, model):
    """The model's forward as the switches shape it (training and evaluation alike)."""
    sw = ctx.switches.get
    body, head = model[:-1], model[-1]
    kind = ctx.device.type

    def forward(x):
        with torch.autocast(kind, dtype=torch.bfloat16, enabled=sw("ROUND_BF16_AUTOCAST") == "1"):
            h = body(x)
            if sw("ROUND_EINSUM_HEAD") == "1":
                # an element-wise product summed by einsum: no BLAS dot, other rounding
                w = head.weight.to(h.dtype)
                logits = torch.einsum("bch->bc", h[:, None, :] * w) + head.bias
            else:
                logits = head(h)
        return logits.float()
    return forward


def train(ctx):
    import torch
    import torch.nn.functional as F

    cfg, on = SIZES[ctx.size], lambda name: ctx.switches.get(name) == "1"
    memory_format = torch.channels_last if on("CHANNELS_LAST") else torch.contiguous_format
    torch.manual_seed(ctx.seed)                      # parameter init
    model = build_model(torch, cfg).to(memory_format=memory_format)
    params = [p for p in model.parameters() if p.requires_grad]
    lr = LR * (1.03 if on("MUT_LR_3") else 1.0) * (1.10 if on("MUT_LR_10") else 1.0)
    optimizer = torch.optim.AdamW(params, lr=lr, foreach=on("FOREACH_OPTIM"),
                                  weight_decay=WEIGHT_DECAY * (2 if on("MUT_WEIGHT_DECAY") else 1),
                                  betas=(BETAS[0], 0.99) if on("MUT_BETA2") else BETAS)
    data = Dataset(torch, cfg, on("DATA_CACHE"), int(ctx.switches["CACHE_LIMIT"]))
    order = Order(torch, cfg["train_samples"], ctx.seed)
    ctx.watch(model, optimizer, extra_bytes=data.cached_bytes)
    ctx.model_flops_per_step = train_flops_per_sample(cfg) * ctx.global_batch
    forward = make_forward(torch, ctx, model)
    B, G, W = ctx.micro_batch, ctx.grad_accum, ctx.world_size
    kept = B - (max(1, B // 8) if on("MUT_DROP_POSITIONS") and B > 1 else 0)
    redundant = max(1, B // REDUNDANT_DIVISOR)       # samples of the extra forward
    smoothing = 0.05 if on("MUT_LABEL_SMOOTH") else 0.0

    for step in ctx.steps():
        torch.manual_seed(ctx.seed * 1000003 + step)   # any per-step randomness
        if on("MUT_WARMUP"):
            optimizer.param_groups[0]["lr"] = lr * min(1.0, (step + 1) / 3)
        optimizer.zero_grad(set_to_none=True)
        loss_sum = torch.zeros((), dtype=torch.float32)
        for micro in range(G):
            first = step * ctx.global_batch + micro * B * W + ctx.rank * B
            x, y = data.batch([order(first + j) for j in range(B)])
            x = x.contiguous(memory_format=memory_format)
            if "SKIP_REDUNDANT" in ctx.switches and not on("SKIP_REDUNDANT"):
                with torch.no_grad():
                    forward(x[:redundant])
            with ctx.forward(input_bytes=x.numel() * x.element_size()):
                logits = forward(x)
                loss = F.cross_entropy(logits[:kept], y[:kept], label_smoothing=smoothing) / G
            loss.backward()
            loss_sum += loss.detach()
        ctx.average_gradients(params)
        ctx.average(loss_sum)
        clip = MUT_CLIP_THRESHOLD if on("MUT_CLIP") else CLIP
        grad_norm = torch.nn.utils.clip_grad_norm_(params, max_norm=clip)
        ctx.record(loss_sum, grad_norm)
        optimizer.step()

    model.eval()                                       # held-out samples: indices >= EVAL_OFFSET
    eval_sum = 0.0
    with torch.no_grad():
        for b in range(ctx.args.eval_batches):
            x, y = data.batch(range(EVAL_OFFSET + b * B, EVAL_OFFSET + (b + 1) * B))
            eval_sum += float(F.cross_entropy(forward(x.contiguous(memory_format=memory_format)),
                                              y, reduction="sum"))
    ctx.eval_loss = eval_sum / (ctx.args.eval_batches * B) if ctx.args.eval_batches else None
    ctx.extra = dict(data.counters, cached_samples=len(data.cache or {}))


TRAINER = sg.Trainer("pytorch-adapter-example", "0.2.0",
                     [sg.Workload(WORKLOAD, SIZES, describe_size)], SWITCHES, train,
                     prog="train.py")


def main(argv):
    return sg.main(TRAINER, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
