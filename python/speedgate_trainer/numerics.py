"""Exact numbers for the gate: float32 bit patterns and canonical state digests."""

import hashlib
import math
import struct


def f32(x):
    """`x` rounded to float32, as a Python float."""
    return struct.unpack(">f", struct.pack(">f", float(x)))[0]


def f32_bits(x):
    """IEEE-754 float32 bit pattern of `x`: lower-case hex, no 0x (protocol section 3)."""
    return struct.pack(">f", float(x)).hex()


def decimal(x):
    """JSON has no NaN or inf: non-finite decimals are null; the *_bits stay exact."""
    return x if x is not None and math.isfinite(x) else None


def tensor_bytes(t):
    """Raw bytes of `t` in the canonical layout (contiguous, row-major, on the host), so a
    switch that changes only a memory format or a device does not change a digest."""
    import torch
    t = t.detach().to("cpu").contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: hash the same bits as int16
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def _update(h, name, t):
    h.update(("%s|%s|%s|" % (name, str(t.dtype), "x".join(map(str, t.shape)))).encode())
    h.update(tensor_bytes(t))


def param_digest(model):
    """sha256 over every trainable parameter in registration order, names and shapes mixed in."""
    h = hashlib.sha256()
    for name, p in model.named_parameters():
        if p.requires_grad:
            _update(h, name, p)
    return h.hexdigest()


def optimizer_digest(model, optimizer):
    """sha256 over every optimizer state entry (tensors by their bytes, step counts by
    value), by parameter in registration order, then by state key."""
    import torch
    h = hashlib.sha256()
    for name, p in model.named_parameters():
        state = optimizer.state.get(p, {})
        for key in sorted(state):
            value = state[key]
            if torch.is_tensor(value):
                _update(h, name + "." + key, value)
            else:
                h.update(("%s.%s=%r|" % (name, key, value)).encode())
    return h.hexdigest()


def perturb_seed(seed):
    """Generator seed of `run --perturb` (docs/protocol.md, section 2)."""
    return (seed * 1000003 + 0x5EED) & 0x7FFFFFFFFFFFFFFF


def perturb_parameters(model, eps, seed):
    """x -> x * (1 + eps * s) for every trainable element, s = +-1 drawn on the CPU from a
    generator seeded by perturb_seed(seed), parameters in named_parameters() order.
    eps == 0 touches nothing, so the run stays bit-identical to one without the flag."""
    import torch
    if eps == 0:
        return
    g = torch.Generator().manual_seed(perturb_seed(seed))
    with torch.no_grad():
        for _, p in model.named_parameters():
            if not p.requires_grad:
                continue
            s = torch.randint(0, 2, tuple(p.shape), generator=g, dtype=torch.int64) * 2 - 1
            factor = 1.0 + eps * s.to(torch.float64)
            p.mul_(factor.to(device=p.device, dtype=p.dtype))


def is_oom(exc):
    """True for an allocator failure (host or CUDA), whatever torch version raised it."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc).lower()
    return any(m in text for m in ("out of memory", "not enough memory", "can't allocate memory"))
