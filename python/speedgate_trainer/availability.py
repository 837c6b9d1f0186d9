"""Reasons a switch cannot run on this torch or machine, for Switch(available=...):
each returns "" when it can, else a sentence for `unavailable_reason`."""

import inspect
import shutil


def torch_at_least(major, minor):
    import torch
    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    return version >= (major, minor)


def sdpa():
    import torch.nn.functional as F
    return "" if hasattr(F, "scaled_dot_product_attention") else \
        "F.scaled_dot_product_attention needs torch >= 2.0"


def compile():  # noqa: A001 -- named after torch.compile
    import torch
    if not hasattr(torch, "compile"):
        return "torch.compile needs torch >= 2.0"
    return "" if torch.cuda.is_available() or shutil.which("cc") else \
        "torch.compile on the CPU needs a C compiler (inductor)"


def fused_adamw():
    import torch
    if "fused" not in inspect.signature(torch.optim.AdamW).parameters:
        return "AdamW(fused=True) needs torch >= 2.0"
    device = "cuda" if torch.cuda.is_available() else "cpu"
    try:  # torch 2.0-2.3 have no fused AdamW on the CPU
        torch.optim.AdamW([torch.zeros(1, device=device, requires_grad=True)], fused=True)
    except (RuntimeError, ValueError) as e:
        return "AdamW(fused=True) on %s: %s" % (device, str(e).splitlines()[0])
    return ""


def tf32():
    import torch
    if not torch.cuda.is_available():
        return "TF32 needs a CUDA GPU"
    return "" if torch.cuda.get_device_capability()[0] >= 8 else "TF32 needs an Ampere or newer GPU"
