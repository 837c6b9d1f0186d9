"""A minimal trainer on the library, used by the library's tests: linear regression on
fixed random data. FAULT (environment, tests only) provokes the failure paths."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import speedgate_trainer as sg  # noqa: E402

SWITCHES = [
    sg.Switch("FOREACH", identity="bitwise", doc="AdamW(foreach=True)"),
    sg.Switch("WIDTH", type="int", min=1, max=64, values=["4", "8"], default="8",
              identity="tolerance", effect="memory", requires=["FOREACH=1"]),
    sg.Switch("MODE", type="enum", values=["a", "b"], default="a", workloads=["reg"]),
    sg.Switch("GPU_ONLY", available=lambda: "needs a GPU"),
]


def describe(name, cfg):
    import torch
    print("building the model prints to stdout")      # must not reach describe's stdout
    os.write(1, b"C-level chatter\n")
    return sg.size_info(torch.nn.Linear(cfg, 1), 2 * cfg, tokens_per_sample=1, default_micro_batch=4)


def train(ctx):
    import torch
    fault = os.environ.get("FAULT", "")
    torch.manual_seed(ctx.seed)
    model = torch.nn.Sequential(torch.nn.Linear(SIZES[ctx.size], int(ctx.value("WIDTH"))),
                                torch.nn.Tanh(), torch.nn.Linear(int(ctx.value("WIDTH")), 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=ctx.on("FOREACH"))
    ctx.watch(model, opt)
    g = torch.Generator().manual_seed(7)
    x = torch.randn(64, SIZES[ctx.size], generator=g)
    y = x.sum(1, keepdim=True)
    for step in ctx.steps():
        if fault == "oom" and step == 1:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        if fault == "crash" and step == 1:
            raise ValueError("synthetic failure")
        if fault == "skip" and step == 1:
            return
        opt.zero_grad(set_to_none=True)
        rows = slice(step * ctx.micro_batch % 64, step * ctx.micro_batch % 64 + ctx.micro_batch)
        with ctx.forward(input_bytes=x[rows].numel() * 4):
            loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
        if fault == "nan" and step == 1:
            loss = loss * float("nan")
        loss.backward()
        ctx.record(loss, torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9))
        opt.step()
    ctx.eval_loss = float(torch.nn.functional.mse_loss(model(x), y)) if ctx.args.eval_batches else None
    ctx.extra["note"] = "toy"


SIZES = {"s": 3, "m": 5}
TRAINER = sg.Trainer("toy", "1.0", [sg.Workload("reg", SIZES, describe),
                                     sg.Workload("other", {"s": 3}, describe)],
                     SWITCHES, train, prog="toy_trainer.py")

if __name__ == "__main__":
    sg.run_main(TRAINER)
