#!/usr/bin/python3
"""A small real PyTorch trainer that speaks the speedgate trainer protocol (version 1).

    train.py describe --json
    train.py run --workload cnn --size tiny --steps 8 --seed 0 --micro-batch 16 \
                 --grad-accum 1 --result out.json [--preset FILE] [--heartbeat PATH] \
                 [--threads T] [--warmup-steps K] [--eval-batches E]

The contract is docs/protocol.md; this file is meant to be copied and adapted (see
README.md next to it). Everything the controller may tune comes from SWITCHES below:
the manifest, the validation of SG_* variables and the preset parser all read it.

Workload "cnn": a small convolutional classifier trained with AdamW on a deterministic
synthetic image dataset synthesised in-process (no files, no downloads).
"""

import argparse
import hashlib
import json
import math
import os
import re
import resource
import struct
import sys
import time
import traceback

PROTOCOL = 1
TRAINER = "pytorch-adapter-example"
VERSION = "0.1.0"

# Exit codes (docs/protocol.md, "Exit codes").
EXIT_OK, EXIT_USAGE, EXIT_OOM, EXIT_NAN = 0, 2, 3, 4


# ---------------------------------------------------------------------------------
# The switch table: the single source of truth for describe, validation and presets.
# Every value is a string, written the way it is written in the environment.
# `identity` was measured, not assumed: see README.md ("Classifying a switch") and
# test_train.py, which re-checks every classification.
# ---------------------------------------------------------------------------------
SWITCHES = [
    {"name": "DATA_CACHE", "type": "bool", "values": ["0", "1"], "default": "0",
     "requires": [], "identity": "bitwise", "effect": "speed",
     "doc": "Keep each synthesised training/eval sample (the expensive render + blur + "
            "downsample) in memory after first use instead of re-synthesising it every "
            "epoch. Samples are pure functions of their index, so the bytes are equal."},
    {"name": "CACHE_LIMIT", "type": "int", "min": 0, "max": 1048576,
     "values": ["0", "32", "128"], "default": "0",
     "requires": ["DATA_CACHE=1"], "identity": "bitwise", "effect": "memory",
     "doc": "Upper bound on cached samples (0 = unbounded); least recently used samples "
            "are evicted and re-synthesised when needed again. Trades speed for memory."},
    {"name": "CHANNELS_LAST", "type": "bool", "values": ["0", "1"], "default": "0",
     "requires": [], "identity": "tolerance", "effect": "speed",
     "doc": "Run the conv stack in torch.channels_last (NHWC) memory format; oneDNN picks "
            "other convolution kernels, so rounding differs from NCHW."},
    {"name": "FOREACH_OPTIM", "type": "bool", "values": ["0", "1"], "default": "0",
     "requires": [], "identity": "bitwise", "effect": "speed",
     "doc": "AdamW(foreach=True): multi-tensor optimizer step (one kernel launch per op "
            "for all parameters) instead of a per-parameter loop. Same element-wise math."},
]
SWITCH_BY_NAME = {s["name"]: s for s in SWITCHES}
SG_PREFIX = "SG_"


class UsageError(Exception):
    """Bad flag, bad switch, bad preset: exit 2."""


class NonFiniteError(Exception):
    """Loss or gradient norm not finite: exit 4."""


def domain_error(spec, value):
    """Empty string when `value` is in the switch's domain, else why not."""
    if spec["type"] == "bool":
        return "" if value in ("0", "1") else "expects 0 or 1"
    if spec["type"] == "enum":
        return "" if value in spec["values"] else "expects one of " + ", ".join(spec["values"])
    if spec["type"] == "int":
        if not re.fullmatch(r"-?[0-9]+", value):
            return "expects an integer"
        if not spec["min"] <= int(value) <= spec["max"]:
            return "expects an integer in %d..%d" % (spec["min"], spec["max"])
        return ""
    return "bad switch type " + spec["type"]


def check_entry(key, value, where):
    """Validates one SG_NAME=value pair in isolation; raises UsageError naming it."""
    if not key.startswith(SG_PREFIX):
        raise UsageError("%s: %s is not an SG_* switch" % (where, key))
    spec = SWITCH_BY_NAME.get(key[len(SG_PREFIX):])
    if spec is None:
        raise UsageError("%s: unknown switch %s (known: %s)" % (
            where, key, ", ".join(SG_PREFIX + s["name"] for s in SWITCHES)))
    err = domain_error(spec, value)
    if err:
        raise UsageError("%s: %s=%s is out of domain: %s" % (where, key, value, err))
    available, reason = switch_available(spec)
    if not available and value != spec["default"]:
        raise UsageError("%s: %s is unavailable: %s" % (where, key, reason))


def switch_available(spec):
    # Every switch here runs on any CPU build. A CUDA-only switch would return
    # (torch.cuda.is_available(), "needs CUDA") and the manifest would say so.
    return True, ""


def read_preset(path):
    """Parses a whole .env preset (SG_NAME=value lines, full-line # comments) before
    anything is applied. Returns {key: (value, where)}."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise UsageError("preset %s: cannot open: %s" % (path, e.strerror))
    entries = {}
    for number, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        where = "preset %s:%d" % (path, number)
        key, eq, value = text.partition("=")
        if not eq or not key:
            raise UsageError("%s: expected SG_NAME=value, got '%s'" % (where, text))
        if not re.fullmatch(r"[A-Z0-9_]+", key):
            raise UsageError("%s: bad variable name '%s'" % (where, key))
        if key in entries:
            raise UsageError("%s: %s already set at %s" % (where, key, entries[key][1]))
        check_entry(key, value, where)
        entries[key] = (value, where)
    return entries


def resolve_switches(environ, preset_path):
    """Preset first, environment wins; then `requires` on the merged configuration.
    Returns {NAME: value} for every switch in the table."""
    chosen = read_preset(preset_path) if preset_path else {}
    for key in sorted(environ):
        if key.startswith(SG_PREFIX):
            check_entry(key, environ[key], "environment")
            chosen[key] = (environ[key], "environment")
    values = {s["name"]: chosen.get(SG_PREFIX + s["name"], (s["default"], ""))[0] for s in SWITCHES}
    for spec in SWITCHES:
        if values[spec["name"]] == spec["default"]:
            continue
        for req in spec["requires"]:
            dep, _, need = req.partition("=")
            if values.get(dep) != need:
                where = chosen[SG_PREFIX + spec["name"]][1]
                raise UsageError("%s: %s%s=%s requires %s%s (it is %s)" % (
                    where, SG_PREFIX, spec["name"], values[spec["name"]],
                    SG_PREFIX, req, values.get(dep)))
    return values


# ---------------------------------------------------------------------------------
# Workload: sizes, model, dataset.
# ---------------------------------------------------------------------------------
WORKLOAD = "cnn"
NUM_CLASSES = 10
DATA_SEED = 20240917          # the dataset is fixed; --seed varies init and order
EVAL_OFFSET = 1 << 30         # eval samples live at indices >= EVAL_OFFSET
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


def forward_flops_per_sample(cfg):
    """Multiply-adds x 2 of the convs and linears (ReLU/pooling ignored)."""
    s, c1, c2, h = cfg["image"], cfg["c1"], cfg["c2"], cfg["hidden"]
    conv = lambda cin, cout, side: 2 * cin * cout * 9 * side * side
    flops = conv(3, c1, s) + conv(c1, c1, s) + conv(c1, c2, s // 2)
    flops += 2 * c2 * (s // 4) ** 2 * h + 2 * h * NUM_CLASSES
    return flops


def train_flops_per_sample(cfg):
    return 3 * forward_flops_per_sample(cfg)   # forward + backward (~2x forward)


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
        if not self.cache:
            return 0
        return sum(x.numel() * x.element_size() for x, _ in self.cache.values())

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
            if self.cache_limit:
                while len(self.cache) >= self.cache_limit:
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


# ---------------------------------------------------------------------------------
# Helpers: exact bits, digests, atomic writes.
# ---------------------------------------------------------------------------------
def f32_bits(x):
    """IEEE-754 float32 bit pattern, lower-case hex, no 0x."""
    return struct.pack(">f", x).hex()


def f32(x):
    return struct.unpack(">f", struct.pack(">f", x))[0]


def decimal(x):
    """JSON has no NaN/inf: non-finite decimals are null, the *_bits stay exact."""
    return x if math.isfinite(x) else None


def tensor_bytes(t):
    # Canonical layout (contiguous, row-major) so the memory format of a tensor
    # (e.g. channels_last) never changes its digest, only its values do.
    return t.detach().cpu().contiguous().numpy().tobytes()


def digest_update(h, name, t):
    h.update(("%s|%s|%s|" % (name, str(t.dtype), "x".join(map(str, t.shape)))).encode())
    h.update(tensor_bytes(t))


def param_digest(model):
    h = hashlib.sha256()
    for name, p in model.named_parameters():
        if p.requires_grad:
            digest_update(h, name, p)
    return h.hexdigest()


def optimizer_digest(torch, model, optimizer):
    h = hashlib.sha256()
    for name, p in model.named_parameters():
        state = optimizer.state.get(p, {})
        for key in sorted(state):
            value = state[key]
            if torch.is_tensor(value):
                digest_update(h, name + "." + key, value)
            else:
                h.update(("%s.%s=%r|" % (name, key, value)).encode())
    return h.hexdigest()


def write_atomic(path, text):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def heartbeat(path, step):
    if path:
        write_atomic(path, json.dumps({"pid": os.getpid(), "step": step, "time": time.time()}))


def is_oom(exc):
    if isinstance(exc, MemoryError):
        return True
    text = str(exc).lower()
    return "out of memory" in text or "not enough memory" in text or "can't allocate memory" in text


def cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu"


def git_sha():
    return os.environ.get("SPEEDGATE_GIT_SHA", "")


# ---------------------------------------------------------------------------------
# describe
# ---------------------------------------------------------------------------------
def manifest():
    import torch
    sizes = []
    for name, cfg in SIZES.items():
        model = build_model(torch, cfg)
        sizes.append({
            "name": name,
            "trainable_params": sum(p.numel() for p in model.parameters() if p.requires_grad),
            "frozen_params": sum(p.numel() for p in model.parameters() if not p.requires_grad),
            "model_flops_per_sample": float(train_flops_per_sample(cfg)),
            "tokens_per_sample": 1,   # one image is one "token" for this classifier
            "default_micro_batch": cfg["default_micro_batch"],
        })
    switches = []
    for spec in SWITCHES:
        available, reason = switch_available(spec)
        entry = {"name": spec["name"], "env": SG_PREFIX + spec["name"], "type": spec["type"]}
        if spec["type"] == "int":
            entry.update({"min": spec["min"], "max": spec["max"]})
        entry.update({"values": list(spec["values"]), "default": spec["default"],
                      "requires": list(spec["requires"]), "identity": spec["identity"],
                      "effect": spec["effect"], "available": available,
                      "unavailable_reason": reason, "doc": spec["doc"]})
        switches.append(entry)
    return {
        "protocol": PROTOCOL, "trainer": TRAINER, "version": VERSION,
        "build": {"torch": torch.__version__, "cuda": False, "git_sha": git_sha()},
        "workloads": [{"name": WORKLOAD, "sizes": sizes}],
        "switches": switches,
        "kernel_families": [],
    }


# ---------------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------------
class SavedBytes:
    """Counts the bytes autograd saves for backward during one forward (dedup by
    storage), i.e. the activation memory of a micro-batch."""

    def __init__(self):
        self.ptrs, self.total = set(), 0

    def pack(self, t):
        key = (t.data_ptr(), t.numel(), t.dtype)
        if key not in self.ptrs:
            self.ptrs.add(key)
            self.total += t.numel() * t.element_size()
        return t

    @staticmethod
    def unpack(t):
        return t


def run(args, values):
    import torch
    import torch.nn.functional as F

    cfg = SIZES[args.size]
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    dist = None
    if world_size > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo")   # reads MASTER_ADDR / MASTER_PORT / RANK / WORLD_SIZE

    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False

    channels_last = values["CHANNELS_LAST"] == "1"
    memory_format = torch.channels_last if channels_last else torch.contiguous_format

    torch.manual_seed(args.seed)                      # parameter init
    model = build_model(torch, cfg).to(memory_format=memory_format)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=2e-3, weight_decay=0.01,
                                  foreach=values["FOREACH_OPTIM"] == "1")
    data = Dataset(torch, cfg, values["DATA_CACHE"] == "1", int(values["CACHE_LIMIT"]))
    order = Order(torch, cfg["train_samples"], args.seed)

    B, G = args.micro_batch, args.grad_accum
    global_batch = B * G * world_size
    param_bytes = sum(p.numel() * p.element_size() for p in params)
    frozen_bytes = sum(p.numel() * p.element_size() for p in model.parameters() if not p.requires_grad)
    peak_live = 0          # high-water mark of the live-tensor estimate
    records = []
    status, error, exit_code = "ok", "", EXIT_OK

    def opt_bytes():
        return sum(v.numel() * v.element_size() for st in optimizer.state.values()
                   for v in st.values() if torch.is_tensor(v))

    heartbeat(args.heartbeat, 0)
    try:
        for step in range(args.steps):
            t0 = time.perf_counter()
            torch.manual_seed(args.seed * 1000003 + step)   # any per-step randomness
            optimizer.zero_grad(set_to_none=True)
            loss_sum = torch.zeros((), dtype=torch.float32)
            for micro in range(G):
                first = step * global_batch + micro * B * world_size + rank * B
                x, y = data.batch([order(first + j) for j in range(B)])
                x = x.contiguous(memory_format=memory_format)
                saved = SavedBytes()
                with torch.autograd.graph.saved_tensors_hooks(saved.pack, saved.unpack):
                    loss = F.cross_entropy(model(x), y) / G   # accumulation averages
                live = (param_bytes + frozen_bytes + opt_bytes() + data.cached_bytes()
                        + x.numel() * x.element_size() + saved.total
                        + (param_bytes if micro > 0 else 0))   # grads held across micro-batches
                peak_live = max(peak_live, live)
                loss.backward()
                loss_sum += loss.detach()
            if dist is not None:
                for p in params:
                    dist.all_reduce(p.grad)
                    p.grad.div_(world_size)
                dist.all_reduce(loss_sum)
                loss_sum.div_(world_size)
            grad_norm = torch.nn.utils.clip_grad_norm_(params, max_norm=5.0)
            loss_v, norm_v = f32(float(loss_sum)), f32(float(grad_norm))
            finite = math.isfinite(loss_v) and math.isfinite(norm_v)
            if finite:
                optimizer.step()
            peak_live = max(peak_live, 2 * param_bytes + frozen_bytes + opt_bytes() + data.cached_bytes())
            records.append({"step": step, "loss": decimal(loss_v), "loss_bits": f32_bits(loss_v),
                            "grad_norm": decimal(norm_v), "grad_norm_bits": f32_bits(norm_v),
                            "seconds": time.perf_counter() - t0})
            if not finite:
                raise NonFiniteError("step %d: loss %r, grad norm %r" % (step, loss_v, norm_v))
            heartbeat(args.heartbeat, step + 1)

        # Evaluation on held-out samples (same synthesis, indices >= EVAL_OFFSET).
        model.eval()
        eval_sum, eval_n = 0.0, 0
        with torch.no_grad():
            for b in range(args.eval_batches):
                first = EVAL_OFFSET + b * B
                x, y = data.batch(range(first, first + B))
                x = x.contiguous(memory_format=memory_format)
                eval_sum += float(F.cross_entropy(model(x), y, reduction="sum"))
                eval_n += B
        eval_loss = f32(eval_sum / eval_n) if eval_n else None   # None: --eval-batches 0
    except NonFiniteError as e:
        status, error, exit_code, eval_loss = "nan", str(e), EXIT_NAN, float("nan")
    except (MemoryError, RuntimeError) as e:
        if not is_oom(e):
            raise
        status, error, exit_code, eval_loss = "oom", str(e).splitlines()[0], EXIT_OOM, float("nan")
    except Exception as e:   # a crash: still leave a result saying why, then exit 1
        traceback.print_exc()
        status, error, exit_code, eval_loss = "error", "%s: %s" % (type(e).__name__, e), 1, float("nan")

    # Steady state: the steps after --warmup-steps; a run too short to have any counts
    # all its steps (as speedgate-train does), so samples/s is always measured.
    steady = records[args.warmup_steps:] if len(records) > args.warmup_steps else records
    steady_s = sum(r["seconds"] for r in steady)
    samples_per_s = len(steady) * global_batch / steady_s if steady and steady_s > 0 else 0.0
    grad_bytes = param_bytes
    optim_bytes = opt_bytes()
    peak_alloc = max(peak_live, param_bytes + grad_bytes + frozen_bytes + optim_bytes)
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024   # Linux: KiB
    peaks_alloc, peaks_rss = [peak_alloc], [peak_rss]
    if dist is not None:
        gathered = [None] * world_size
        dist.all_gather_object(gathered, (peak_alloc, peak_rss))
        peaks_alloc, peaks_rss = [g[0] for g in gathered], [g[1] for g in gathered]

    if rank == 0:
        result = {
            "protocol": PROTOCOL, "status": status, "error": error,
            "workload": args.workload, "size": args.size, "seed": args.seed, "steps": args.steps,
            "micro_batch": B, "grad_accum": G, "world_size": world_size,
            "switches": {SG_PREFIX + s["name"]: values[s["name"]] for s in SWITCHES},
            "step_records": records,
            "param_digest": param_digest(model),
            "optimizer_digest": optimizer_digest(torch, model, optimizer),
            "eval_loss": None if eval_loss is None else decimal(eval_loss),
            "eval_loss_bits": "" if eval_loss is None else f32_bits(eval_loss),
            "samples_per_s": samples_per_s,
            "tokens_per_s": samples_per_s * 1,   # tokens_per_sample = 1
            "steady_state_steps": len(steady),
            "model_flops_per_step": float(train_flops_per_sample(cfg) * global_batch),
            "memory": {
                "device": "cpu",
                "peak_allocated_bytes": peaks_alloc, "peak_reserved_bytes": peaks_rss,
                "breakdown": {"parameters": param_bytes, "gradients": grad_bytes,
                              "optimizer": optim_bytes, "frozen": frozen_bytes,
                              "activations": peak_alloc - param_bytes - grad_bytes
                                             - optim_bytes - frozen_bytes},
            },
            "fingerprint": {"device": "cpu", "device_name": cpu_name(), "sm_count": 0,
                            "driver": "", "cuda": "", "cudnn": "", "nccl": "",
                            "torch": torch.__version__, "git_sha": git_sha(),
                            "threads": args.threads,
                            "deterministic": torch.are_deterministic_algorithms_enabled(),
                            "world_size": world_size},
            "extra": dict(data.counters, cached_samples=len(data.cache or {})),
        }
        write_atomic(args.result, json.dumps(result, indent=1) + "\n")
    if dist is not None:
        dist.destroy_process_group()
    if status != "ok":
        print("train.py: %s: %s" % (status, error), file=sys.stderr)
    return exit_code


# ---------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------
class Parser(argparse.ArgumentParser):
    def error(self, message):              # argparse already exits 2; keep it explicit
        self.print_usage(sys.stderr)
        print("%s: error: %s" % (self.prog, message), file=sys.stderr)
        sys.exit(EXIT_USAGE)


def positive(text):
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return v


def non_negative(text):
    v = int(text)
    if v < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return v


def parse_args(argv):
    parser = Parser(prog="train.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    d = sub.add_parser("describe", help="print the manifest")
    d.add_argument("--json", action="store_true", required=True)
    r = sub.add_parser("run", help="train and write a result file")
    r.add_argument("--workload", required=True, choices=[WORKLOAD])
    r.add_argument("--size", required=True, choices=list(SIZES))
    r.add_argument("--steps", required=True, type=positive)
    r.add_argument("--seed", required=True, type=non_negative)
    r.add_argument("--micro-batch", required=True, type=positive)
    r.add_argument("--grad-accum", required=True, type=positive)
    r.add_argument("--result", required=True)
    r.add_argument("--preset")
    r.add_argument("--heartbeat")
    r.add_argument("--threads", type=positive, default=2)
    r.add_argument("--warmup-steps", type=non_negative, default=2)
    r.add_argument("--eval-batches", type=non_negative, default=2)
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    if args.command == "describe":
        print(json.dumps(manifest(), indent=1))
        return EXIT_OK
    try:
        values = resolve_switches(os.environ, args.preset)
    except UsageError as e:
        print("train.py: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    try:
        return run(args, values)
    except MemoryError as e:
        # OOM before the training loop (model/dataset construction): no result possible.
        print("train.py: out of memory: %s" % e, file=sys.stderr)
        return EXIT_OOM


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
