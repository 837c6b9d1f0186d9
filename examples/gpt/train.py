#!/usr/bin/python3
"""A GPT training loop made tunable with speedgate_trainer: a byte-level GPT (model.py)
trained with AdamW on the license texts Debian ships (/usr/share/common-licenses, or
$SPEEDGATE_LM_CORPUS_DIR). Protocol: docs/protocol.md; switches: README.md."""

import contextlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "python")]
import speedgate_trainer as sg  # noqa: E402


SWITCHES = [
    sg.Switch("SDPA", identity="tolerance", available=sg.availability.sdpa,
              doc="F.scaled_dot_product_attention instead of the explicit softmax(QK^T)V"),
    sg.Switch("FOREACH_ADAMW", identity="bitwise", doc="AdamW(foreach=True): multi-tensor step"),
    sg.Switch("FUSED_ADAMW", identity="tolerance", available=sg.availability.fused_adamw,
              requires=["FOREACH_ADAMW=0"], doc="AdamW(fused=True): one fused kernel"),
    sg.Switch("BF16_AUTOCAST", identity="tolerance", doc="forward under bf16 autocast"),
    sg.Switch("COMPILE", identity="tolerance", available=sg.availability.compile,
              doc="torch.compile(model) (inductor)"),
    sg.Switch("RESIDENT_DATA", identity="bitwise",
              doc="corpus kept as one tensor on the device; batches gathered there instead "
                  "of built from host bytes and copied (pinned on CUDA) every micro-batch"),
]


def read_corpus():
    root = os.environ.get("SPEEDGATE_LM_CORPUS_DIR", "/usr/share/common-licenses")
    names = sorted(n for n in os.listdir(root) if not os.path.islink(os.path.join(root, n)))
    data = b"".join(open(os.path.join(root, n), "rb").read() for n in names)
    cut = len(data) * 9 // 10
    return data[:cut], data[cut:]          # train, held-out


class Batches:
    """Sample i is the window at a fixed pseudo-random offset: a pure function of (i, seed),
    so micro-batch and accumulation splits see the same samples."""

    def __init__(self, torch, data, block, seed, device, resident):
        self.torch, self.data, self.T, self.seed, self.device = torch, data, block, seed, device
        self.resident = None
        if resident:
            self.resident = torch.tensor(list(data), dtype=torch.uint8, device=device)

    def __call__(self, first, n):
        starts = [(i * 7919 + self.seed * 104729) % (len(self.data) - self.T - 1)
                  for i in range(first, first + n)]
        torch = self.torch
        if self.resident is not None:
            window = torch.arange(self.T + 1, device=self.device)
            idx = torch.tensor(starts, device=self.device)[:, None] + window
            rows = self.resident[idx].long()
        else:
            rows = torch.tensor([list(self.data[s:s + self.T + 1]) for s in starts],
                                dtype=torch.long)
            if self.device.type == "cuda":
                rows = rows.pin_memory().to(self.device, non_blocking=True)
        return rows[:, :-1], rows[:, 1:]


def describe_size(name, cfg):
    from model import GPT, flops_per_token
    m = GPT(cfg)
    per_token = float(flops_per_token(m, cfg))
    return sg.size_info(m, per_token * cfg["block"], cfg["block"], cfg["default_micro_batch"],
                        model_flops_per_token=per_token)


def train(ctx):
    import torch
    import torch.nn.functional as F
    from model import GPT, SIZES, VOCAB, flops_per_token

    cfg, on = SIZES[ctx.size], ctx.on
    torch.manual_seed(ctx.seed)
    model = GPT(cfg, sdpa=on("SDPA")).to(ctx.device)
    params = [p for p in model.parameters() if p.requires_grad]
    kw = {"fused": True} if on("FUSED_ADAMW") else {"foreach": on("FOREACH_ADAMW")}
    opt = torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1, **kw)
    ctx.watch(model, opt)
    forward = torch.compile(model) if on("COMPILE") else model
    train_data, held_out = read_corpus()
    batches = Batches(torch, train_data, cfg["block"], ctx.seed, ctx.device, on("RESIDENT_DATA"))
    ctx.tokens_per_sample = cfg["block"]
    ctx.model_flops_per_step = flops_per_token(model, cfg) * cfg["block"] * ctx.global_batch
    B, G = ctx.micro_batch, ctx.grad_accum

    def loss_of(x, y):
        with torch.autocast(ctx.device.type, dtype=torch.bfloat16, enabled=on("BF16_AUTOCAST")):
            logits = forward(x)
        return F.cross_entropy(logits.float().view(-1, VOCAB), y.reshape(-1))

    for step in ctx.steps():
        opt.zero_grad(set_to_none=True)
        loss_sum = torch.zeros((), device=ctx.device)
        for micro in range(G):
            x, y = batches(step * ctx.global_batch + (micro * ctx.world_size + ctx.rank) * B, B)
            # saved-tensor hooks count activations on the CPU; compiled graphs run without them
            account = contextlib.nullcontext() if on("COMPILE") else ctx.forward(2 * x.numel() * 8)
            with account:
                loss = loss_of(x, y) / G
            loss.backward()
            loss_sum += loss.detach()
        ctx.average_gradients(params)
        ctx.average(loss_sum)
        ctx.record(loss_sum, torch.nn.utils.clip_grad_norm_(params, 1.0))
        opt.step()

    held = Batches(torch, held_out, cfg["block"], 0, ctx.device, False)
    with torch.no_grad():
        losses = [float(loss_of(*held(b * B, B))) for b in range(ctx.args.eval_batches)]
    ctx.eval_loss = sum(losses) / len(losses) if losses else None


def describe_workloads():
    from model import SIZES
    return [sg.Workload("gpt", SIZES, describe_size)]


if __name__ == "__main__":
    sg.run_main(sg.Trainer("gpt-example", "0.1.0", describe_workloads(), SWITCHES, train,
                           device="auto", prog="train.py"))
