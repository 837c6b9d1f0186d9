"""The run context: what a trainer's `train(ctx)` uses to follow protocol section 3.

    def train(ctx):
        model, optimizer = build(ctx.seed), ...
        ctx.watch(model, optimizer)               # digests, memory, --perturb
        for step in ctx.steps():                  # timing, heartbeat
            ...forward (inside `with ctx.forward():`), backward...
            ctx.record(loss, grad_norm)           # bits; raises on non-finite values
            optimizer.step()
        ctx.eval_loss = ...                       # optional

Library code: it raises, never exits; cli.main maps outcomes to exit codes.
"""

import math
import os
import platform
import re
import time
import traceback

from . import numerics
from .files import heartbeat, write_json_atomic
from .memory import MemoryMeter
from .switches import UsageError

EXIT_OK, EXIT_CRASH, EXIT_USAGE, EXIT_OOM, EXIT_NAN = 0, 1, 2, 3, 4


class NonFiniteError(Exception):
    """A loss or gradient norm that is NaN or infinite: status "nan", exit 4."""


def _cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def _dist_env(environ):
    """(rank, world_size, local_rank) from torchrun's variables, or Slurm's when RANK is
    unset (protocol section 8). Raises UsageError naming a malformed variable."""
    slurm = "RANK" not in environ and "SLURM_PROCID" in environ
    names = ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID") if slurm else \
        ("RANK", "WORLD_SIZE", "LOCAL_RANK")
    out = []
    for name, default in zip(names, ("0", "1", "0")):
        text = environ.get(name, default)
        if not re.fullmatch(r"[0-9]+", text):
            raise UsageError("%s=%r is not a non-negative integer" % (name, text))
        out.append(int(text))
    rank, world, _ = out
    if world < 1 or rank >= world:
        raise UsageError("%s=%d is not below %s=%d" % (names[0], rank, names[1], world))
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        if world > 1 and not environ.get(name):
            raise UsageError("%s is required when %s > 1" % (name, names[1]))
    return tuple(out)


class RunContext:
    def __init__(self, trainer, args, switches, environ):
        self.trainer, self.args, self.switches = trainer, args, switches
        self.workload, self.size, self.seed = args.workload, args.size, args.seed
        self.num_steps, self.micro_batch = args.steps, args.micro_batch
        self.grad_accum = args.grad_accum
        self.perturb = args.perturb
        self.rank, self.world_size, self.local_rank = _dist_env(environ)
        self.records = []
        self.eval_loss = None            # float32 value, or None when not evaluated
        self.extra = {}                  # trainer-specific counters for people
        self.tokens_per_sample = 1.0     # set by trainers whose samples hold tokens
        self.model_flops_per_step = 0.0  # forward + backward FLOPs of one optimizer step
        self.deterministic = True
        self.model = self.optimizer = None
        self.device = None
        self._dist = None
        self._step_start = None
        self._ended = 0               # steps ended by end_step()

    # -- switches ----------------------------------------------------------------------
    def value(self, name):
        return self.switches[name]

    def on(self, name):
        return self.switches[name] == "1"

    def int(self, name):
        return int(self.switches[name])

    @property
    def global_batch(self):
        return self.micro_batch * self.grad_accum * self.world_size

    # -- the trainer's calls -------------------------------------------------------------
    def watch(self, model, optimizer, extra_bytes=None):
        """Registers the model and optimizer whose state the result digests, and applies
        --perturb (call it before the first step). `extra_bytes`: a callable giving other
        bytes the trainer holds (CPU memory accounting)."""
        if self.records or self.model is not None:
            raise RuntimeError("ctx.watch() twice, or after the first recorded step")
        self.model, self.optimizer = model, optimizer
        self.memory.watch(model, optimizer, extra_bytes)
        numerics.perturb_parameters(model, self.perturb, self.seed)

    def steps(self):
        """Yields 0..steps-1; times each step and writes the heartbeat after it."""
        for step in range(self.num_steps):
            self.begin_step()
            yield step
            self.end_step()

    def begin_step(self):
        """For loops the trainer does not own (e.g. a Hugging Face Trainer's callbacks):
        marks the start of an optimizer step; end_step() after its ctx.record()."""
        if self.perturb and self.model is None:
            raise RuntimeError("--perturb needs ctx.watch(model, optimizer) before the steps")
        self._step_start = time.perf_counter()

    def end_step(self):
        if self.device.type == "cuda":
            import torch
            torch.cuda.synchronize(self.device)
        if self._step_start is None or len(self.records) != self._ended + 1:
            raise RuntimeError("step %d ended without begin_step() and one ctx.record()"
                               % self._ended)
        self.records[-1]["seconds"] = time.perf_counter() - self._step_start
        self._step_start, self._ended = None, self._ended + 1
        self.memory.sample()
        heartbeat(self.args.heartbeat if self.rank == 0 else None, self._ended)

    def forward(self, input_bytes=0):
        """Context manager around a micro-batch's forward (memory accounting on the CPU)."""
        return self.memory.forward(input_bytes)

    def record(self, loss, grad_norm):
        """Records this step's loss and gradient norm (tensors or floats) as float32; raises
        NonFiniteError after recording a non-finite one, before the optimizer steps."""
        step = len(self.records)
        loss_v, norm_v = numerics.f32(float(loss)), numerics.f32(float(grad_norm))
        self.records.append({
            "step": step, "loss": numerics.decimal(loss_v), "loss_bits": numerics.f32_bits(loss_v),
            "grad_norm": numerics.decimal(norm_v), "grad_norm_bits": numerics.f32_bits(norm_v),
            "seconds": time.perf_counter() - (self._step_start or time.perf_counter())})
        if not (math.isfinite(loss_v) and math.isfinite(norm_v)):
            raise NonFiniteError("step %d: loss %r, grad norm %r" % (step, loss_v, norm_v))

    # -- distributed helpers -------------------------------------------------------------
    def average_gradients(self, params):
        """Data parallel: every rank's gradients become the mean over ranks."""
        if self._dist is None:
            return
        for p in params:
            if p.grad is not None:
                self._dist.all_reduce(p.grad)
                p.grad.div_(self.world_size)

    def average(self, tensor):
        """Data parallel: `tensor` (in place) becomes its mean over ranks."""
        if self._dist is not None:
            self._dist.all_reduce(tensor)
            tensor.div_(self.world_size)
        return tensor

    # -- driver (cli.main) ---------------------------------------------------------------
    def _setup(self):
        import torch
        torch.set_num_threads(self.args.threads)
        torch.use_deterministic_algorithms(self.deterministic)
        torch.backends.cudnn.benchmark = False
        use_cuda = self.trainer.device != "cpu" and torch.cuda.is_available()
        self.device = torch.device("cuda", self.local_rank) if use_cuda else torch.device("cpu")
        if use_cuda:
            torch.cuda.set_device(self.device)
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        if self.world_size > 1:
            import torch.distributed as dist
            dist.init_process_group("nccl" if use_cuda else "gloo")
            self._dist = dist
        self.memory = MemoryMeter(self.device)

    def execute(self, train):
        """Runs train(self) and writes the result (rank 0). Returns the exit code."""
        self._setup()
        status, error, code = "ok", "", EXIT_OK
        heartbeat(self.args.heartbeat if self.rank == 0 else None, 0)
        try:
            train(self)
            if len(self.records) != self.num_steps:
                raise RuntimeError("the trainer recorded %d steps of %d" % (
                    len(self.records), self.num_steps))
        except NonFiniteError as e:
            status, error, code = "nan", str(e), EXIT_NAN
        except Exception as e:  # noqa: BLE001 -- every failure still leaves a result
            if numerics.is_oom(e):
                why = str(e).splitlines()[0] if str(e) else "out of memory"
                status, error, code = "oom", why, EXIT_OOM
            else:
                traceback.print_exc()
                status, error, code = "error", "%s: %s" % (type(e).__name__, e), EXIT_CRASH
        result = self._result(status, error)
        if self.rank == 0:
            write_json_atomic(self.args.result, result)
        if self._dist is not None:
            self._dist.destroy_process_group()
        return code

    def _fingerprint(self):
        import torch
        fp = {"device": self.device.type, "device_name": _cpu_name(), "sm_count": 0,
              "driver": "", "cuda": "", "cudnn": "", "nccl": "", "torch": torch.__version__,
              "git_sha": os.environ.get("SPEEDGATE_GIT_SHA", ""), "threads": self.args.threads,
              "deterministic": torch.are_deterministic_algorithms_enabled(),
              "world_size": self.world_size}
        if self.device.type == "cuda":
            props = torch.cuda.get_device_properties(self.device)
            fp.update({"device_name": props.name, "sm_count": props.multi_processor_count,
                       "cuda": torch.version.cuda or "",
                       "cudnn": str(torch.backends.cudnn.version() or "")})
        if self._dist is not None:
            fp["dist_backend"] = self._dist.get_backend()
        return fp

    def _result(self, status, error):
        steady = self.records[self.args.warmup_steps:]
        if not steady:  # too short to have a steady state: all steps count, as speedgate-train
            steady = self.records
        steady_s = sum(r["seconds"] for r in steady)
        samples_per_s = len(steady) * self.global_batch / steady_s if steady_s > 0 else 0.0
        alloc, reserved, breakdown = self.memory.report()
        allocs, reserveds = [alloc], [reserved]
        digests = [numerics.param_digest(self.model)] if self.model is not None else [""]
        if self._dist is not None:
            gathered = [None] * self.world_size
            self._dist.all_gather_object(gathered, (alloc, reserved, digests[0]))
            allocs, reserveds, digests = ([g[i] for g in gathered] for i in range(3))
        ev = self.eval_loss
        result = {
            "protocol": 1, "status": status, "error": error,
            "workload": self.workload, "size": self.size, "seed": self.seed,
            "steps": self.num_steps, "micro_batch": self.micro_batch,
            "grad_accum": self.grad_accum, "world_size": self.world_size,
            "perturb": self.perturb,
            "switches": {"SG_" + name: value for name, value in self.switches.items()},
            "step_records": self.records,
            "param_digest": digests[0], "rank_param_digests": digests,
            "optimizer_digest": numerics.optimizer_digest(self.model, self.optimizer)
            if self.optimizer is not None else "",
            "eval_loss": None if ev is None else numerics.decimal(numerics.f32(ev)),
            "eval_loss_bits": "" if ev is None else numerics.f32_bits(ev),
            "samples_per_s": samples_per_s,
            "tokens_per_s": samples_per_s * self.tokens_per_sample,
            "steady_state_steps": len(steady),
            "model_flops_per_step": float(self.model_flops_per_step),
            "memory": {"device": self.device.type, "peak_allocated_bytes": allocs,
                       "peak_reserved_bytes": reserveds, "breakdown": breakdown},
            "fingerprint": self._fingerprint(),
        }
        if self.extra:
            result["extra"] = self.extra
        return result
