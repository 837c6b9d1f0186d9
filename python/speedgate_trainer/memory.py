"""Peak memory and its breakdown (docs/protocol.md section 3, `memory`).

On CUDA the caching allocator's peaks are read. On the CPU, where torch keeps no
statistics, an accountant estimates the live bytes at a few points of every step:
parameters, gradients, optimizer state, frozen weights, what the trainer says it holds
besides (data caches, the input batch) and what autograd saves for backward.
"""

import contextlib
import resource


def _bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


class _SavedBytes:
    """Bytes autograd saves during one forward, each storage once."""

    def __init__(self):
        self.seen, self.total = set(), 0

    def pack(self, t):
        key = (t.data_ptr(), t.numel(), t.dtype)
        if key not in self.seen:
            self.seen.add(key)
            self.total += t.numel() * t.element_size()
        return t

    @staticmethod
    def unpack(t):
        return t


class MemoryMeter:
    def __init__(self, device):
        self.device = device
        self.model = self.optimizer = None
        self.extra_bytes = lambda: 0
        self.peak_live = 0
        if device.type == "cuda":
            import torch
            torch.cuda.reset_peak_memory_stats(device)

    def watch(self, model, optimizer, extra_bytes=None):
        self.model, self.optimizer = model, optimizer
        if extra_bytes is not None:
            self.extra_bytes = extra_bytes

    def _params(self, trainable):
        if self.model is None:
            return []
        return [p for p in self.model.parameters() if p.requires_grad == trainable]

    def parameter_bytes(self):
        return _bytes(self._params(True))

    def frozen_bytes(self):
        return _bytes(self._params(False))

    def optimizer_bytes(self):
        import torch
        if self.optimizer is None:
            return 0
        return _bytes(v for st in self.optimizer.state.values() for v in st.values()
                      if torch.is_tensor(v))

    def live_bytes(self, more=0):
        grads = _bytes(p.grad for p in self._params(True) if p.grad is not None)
        return (self.parameter_bytes() + self.frozen_bytes() + grads + self.optimizer_bytes()
                + int(self.extra_bytes()) + more)

    def sample(self, more=0):
        """CPU: raises the high-water mark to the live bytes now, plus `more`."""
        if self.device.type != "cuda":
            self.peak_live = max(self.peak_live, self.live_bytes(more))

    @contextlib.contextmanager
    def forward(self, input_bytes=0):
        """Wrap a micro-batch's forward: on the CPU the bytes autograd saves for backward,
        with the inputs, count towards the peak."""
        if self.device.type == "cuda":
            yield
            return
        import torch
        saved = _SavedBytes()
        with torch.autograd.graph.saved_tensors_hooks(saved.pack, saved.unpack):
            yield
        self.sample(saved.total + input_bytes)

    def report(self):
        """(peak_allocated, peak_reserved, breakdown) of this process."""
        params, frozen, optim = self.parameter_bytes(), self.frozen_bytes(), self.optimizer_bytes()
        grads = params
        if self.device.type == "cuda":
            import torch
            alloc = int(torch.cuda.max_memory_allocated(self.device))
            reserved = int(torch.cuda.max_memory_reserved(self.device))
        else:
            alloc = max(self.peak_live, params + grads + frozen + optim)
            reserved = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
        breakdown = {"parameters": params, "gradients": grads, "optimizer": optim,
                     "frozen": frozen,
                     "activations": max(0, alloc - params - grads - optim - frozen)}
        return alloc, reserved, breakdown
