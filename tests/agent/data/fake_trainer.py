#!/usr/bin/env -S python3 -S
"""A fake trainer that speaks speedgate's trainer protocol v1 (docs/protocol.md).

Results are computed deterministically from the switches and the seed so the
controller's gate, projection and search logic can be exercised without LibTorch:
  - loss / grad norm per step depend on the seed (a seed-to-seed band exists);
  - tolerance switches perturb the curve well inside the band, ACCUM_BUG scales
    the grad norm 4x (the accumulation bug), BAD_BITS flips loss bits (bitwise
    failure), PAIR_A + PAIR_B together change the bits (minifier target);
  - throughput is a product of per-switch factors; memory follows
    fixed + per_sample * micro_batch with CKPT_LAYERS shrinking per_sample.
Fault knobs (environment, not switches): FAKE_FAULT = oom | sigkill | hang |
hang_grandchild | exit_grandchild | nan | empty | partial | garbage | wrong_schema |
big_output | segv | no_result | crash | setsid_grandchild (starts a grandchild that
calls setsid and one that stays in the group, both sleeping 300 s with no pipes, then
runs normally) | setsid_hang (the same, then hangs ignoring SIGTERM) | ignore_term
(hangs ignoring SIGTERM); FAKE_PID_DIR=DIR: every run creates DIR/trainer.PID and its
grandchildren DIR/setsid.PID, DIR/group.PID; FAKE_RUN_LOG=FILE: every run appends its
arguments and switches as one line; FAKE_DESCRIBE=hang: `describe` starts a setsid
grandchild holding stdout and hangs ignoring SIGTERM; FAKE_STEP_SLEEP seconds per step;
FAKE_MANIFEST = full | small | combinable (switches that all pass the gate together, one of
them slower: a stack that prune shrinks); FAKE_NONDETERMINISTIC=1 makes runs differ;
FAKE_DEVICE_GIB=N: a run whose peak exceeds N GiB ends out of memory (exit 3), as on a
device with N GiB;
FAKE_SLEEP_ONCE_IF=SWITCH:MARKER sleeps 30 s in the first run that sets SWITCH;
FAKE_FAULT_IF=SWITCH=VALUE:FAULT[,...] injects FAULT only into runs with that switch
value (a campaign whose baseline is healthy meets the fault mid-search);
FAKE_KERNELS=1 makes the ROPE family available and timeable (`kernel-trial`, protocol
section 5: plain 20 us, threads=64 10 us, threads=128 8 us forward + backward);
FAKE_KERNEL_DRIFT=PARAMS: training with SG_KERNEL_ROPE=PARAMS changes the loss bits (a
variant that is fast but not bitwise in training); FAKE_KERNEL_MISMATCH=PARAMS: the
kernel trial reports that variant as not bitwise the plain one;
FAKE_TARGET_SPEED=SWITCH=VALUE:FACTOR[,...] multiplies the samples/s of runs at micro-batch
32 or more (the tests' target) that set SWITCH=VALUE: a gain that depends on the batch size;
FAKE_LUCKY_ONCE=SWITCH=VALUE:FACTOR:MARKER multiplies the samples/s of the first such run
only (MARKER, a file, records that it happened): one lucky unpaired measurement;
FAKE_TARGET_DRIFT=SWITCH=VALUE changes the loss bits of runs at micro-batch 32 or more that
set it (bitwise at the campaign's micro-batch, not at the target).
Results that lie or are hostile (tests/agent/result_check_test.cpp): FAKE_FAULT = lie_seed
(reports seed + 1) | nan_ok (status ok, last loss NaN) | deep (nested 100,000 deep) |
huge (17 MiB) | long_string (a 100 KiB string) | deep_heartbeat; FAKE_RESULT_PATCH = a JSON
object merged into an ok result, dotted keys reaching into objects and lists
("memory.peak_allocated_bytes"), null deleting the key.
"""
import hashlib
import json
import math
import os
import signal
import struct
import subprocess
import sys
import time

GiB = 1024 ** 3


def sw(name, typ, values, default, identity, effect, requires=(), available=True, lo=None, hi=None, doc=""):
    d = {"name": name, "env": "SG_" + name, "type": typ, "values": values, "default": default,
         "requires": list(requires), "identity": identity, "effect": effect, "available": available,
         "unavailable_reason": "" if available else "needs CUDA", "doc": doc or name.lower()}
    if typ == "int":
        d["min"], d["max"] = lo, hi
    return d


SWITCHES_FULL = [
    sw("TEXT_CACHE", "bool", ["0", "1"], "0", "bitwise", "speed", doc="text-encoder output cache"),
    sw("FAST_MISS", "bool", ["0", "1"], "0", "tolerance", "speed", requires=["TEXT_CACHE=1"]),
    sw("ACCUM_BUG", "bool", ["0", "1"], "0", "tolerance", "speed", doc="sums micro-batches: 4x grad norm"),
    sw("BAD_BITS", "bool", ["0", "1"], "0", "bitwise", "speed", doc="claims bitwise but is not"),
    sw("PAIR_A", "bool", ["0", "1"], "0", "bitwise", "speed"),
    sw("PAIR_B", "bool", ["0", "1"], "0", "bitwise", "speed"),
    sw("SLOWER", "bool", ["0", "1"], "0", "bitwise", "schedule"),
    sw("WORKERS", "int", ["0", "1", "2", "4"], "0", "bitwise", "schedule", lo=0, hi=16),
    sw("CKPT_LAYERS", "int", ["-1", "2", "4"], "-1", "bitwise", "memory", lo=-1, hi=64),
    sw("ATTN", "enum", ["math", "efficient", "flash"], "math", "tolerance", "speed"),
    sw("CUDA_GRAPHS", "bool", ["0", "1"], "0", "bitwise", "speed", available=False),
]
SWITCHES_SMALL = [s for s in SWITCHES_FULL if s["name"] in ("TEXT_CACHE", "FAST_MISS", "ACCUM_BUG", "CKPT_LAYERS")]
SWITCHES_COMBINABLE = [s for s in SWITCHES_FULL if s["name"] in ("TEXT_CACHE", "FAST_MISS", "SLOWER", "WORKERS", "CKPT_LAYERS")]
MANIFESTS = {"small": SWITCHES_SMALL, "combinable": SWITCHES_COMBINABLE}

SPEED = {"TEXT_CACHE": {"1": 1.30}, "FAST_MISS": {"1": 1.10}, "ACCUM_BUG": {"1": 1.20}, "BAD_BITS": {"1": 1.25},
         "PAIR_A": {"1": 1.05}, "PAIR_B": {"1": 1.06}, "SLOWER": {"1": 0.97},
         "WORKERS": {"1": 1.05, "2": 1.12, "4": 1.15}, "CKPT_LAYERS": {"2": 0.90, "4": 0.85},
         "ATTN": {"efficient": 1.08, "flash": 1.15}}
ACT_FACTOR = {"-1": 1.0, "0": 1.0, "2": 0.6, "4": 0.3}


def manifest():
    switches = MANIFESTS.get(os.environ.get("FAKE_MANIFEST", ""), SWITCHES_FULL)
    return {"protocol": 1, "trainer": "fake-trainer", "version": "0.0.1",
            "build": {"torch": "none", "cuda": False, "git_sha": "fake"},
            "workloads": [{"name": "wam", "sizes": [
                {"name": "tiny", "trainable_params": 1000, "frozen_params": 100,
                 "model_flops_per_sample": 1e9, "tokens_per_sample": 48, "default_micro_batch": 2}]}],
            "switches": switches,
            "kernel_families": [{"name": "ROPE", "env": "SG_KERNEL_ROPE", "switch": "TEXT_CACHE",
                                 "parameters": [{"name": "threads", "values": ["64", "128"]}],
                                 "constraints": [], "available": KERNELS,
                                 "unavailable_reason": "" if KERNELS else "no CUDA in this build",
                                 "kernel_trial": KERNELS}]}


KERNELS = os.environ.get("FAKE_KERNELS") == "1"
KERNEL_US = {"plain": 20.0, "threads=64": 10.0, "threads=128": 8.0}


def unit(*key):
    h = hashlib.sha256(repr(key).encode()).digest()
    return struct.unpack(">Q", h[:8])[0] / 2 ** 64 * 2 - 1


def f32(x):
    return struct.unpack(">f", struct.pack(">f", x))[0]


def bits(x):
    return struct.pack(">f", x).hex()


def atomic_write(path, text):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)


def record_start():
    d = os.environ.get("FAKE_PID_DIR")
    if d:
        open(os.path.join(d, "trainer.%d" % os.getpid()), "w").close()
    log = os.environ.get("FAKE_RUN_LOG")
    if log:
        sw_env = sorted("%s=%s" % kv for kv in os.environ.items() if kv[0].startswith("SG_"))
        with open(log, "a") as f:  # one short O_APPEND write per run: lines never interleave
            f.write(" ".join(sys.argv[1:] + sw_env) + "\n")


def start_grandchildren(hold_stdout=False):
    """A grandchild that leaves the group and session (setsid) and one that stays."""
    d = os.environ.get("FAKE_PID_DIR", "")
    out = None if hold_stdout else subprocess.DEVNULL
    for name, new_session in (("setsid", True), ("group", False)):
        p = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.DEVNULL,
                             start_new_session=new_session)
        if d:
            open(os.path.join(d, "%s.%d" % (name, p.pid)), "w").close()


def hang_ignoring_term():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(1)


def parse_args(argv):
    args = {"--threads": "2", "--warmup-steps": "2", "--heartbeat": None}
    i = 0
    while i < len(argv):
        k = argv[i]
        if not k.startswith("--") or i + 1 >= len(argv):
            sys.stderr.write("fake: bad argument %s\n" % k)
            sys.exit(2)
        args[k] = argv[i + 1]
        i += 2
    for need in ("--workload", "--size", "--steps", "--seed", "--micro-batch", "--grad-accum", "--result"):
        if need not in args:
            sys.stderr.write("fake: missing %s\n" % need)
            sys.exit(2)
    return args


def switches_from_env():
    table = {s["env"]: s for s in manifest()["switches"]}
    cfg = {}
    for k, v in os.environ.items():
        if not k.startswith("SG_"):
            continue
        if k == "SG_KERNEL_ROPE" and KERNELS:
            if v not in KERNEL_US or v == "plain":
                sys.stderr.write("fake: SG_KERNEL_ROPE=%s is not a parameter string\n" % v)
                sys.exit(2)
            cfg["KERNEL_ROPE"] = v
            continue
        s = table.get(k)
        if s is None:
            sys.stderr.write("fake: unknown switch %s\n" % k)
            sys.exit(2)
        ok = (s["min"] <= int(v) <= s["max"]) if s["type"] == "int" else v in s["values"]
        if not ok:
            sys.stderr.write("fake: %s=%s out of domain\n" % (k, v))
            sys.exit(2)
        if v != s["default"] and not s["available"]:
            sys.stderr.write("fake: %s unavailable\n" % k)
            sys.exit(2)
        cfg[s["name"]] = v
    for name, v in cfg.items():
        if name == "KERNEL_ROPE":
            continue
        s = next(x for x in manifest()["switches"] if x["name"] == name)
        if v == s["default"]:
            continue
        for r in s["requires"]:
            rn, rv = r.split("=")
            if cfg.get(rn, next(x for x in manifest()["switches"] if x["name"] == rn)["default"]) != rv:
                sys.stderr.write("fake: %s requires %s\n" % (name, r))
                sys.exit(2)
    return cfg


def on(cfg, name, value="1"):
    return cfg.get(name) == value


def run(argv):
    a = parse_args(argv)
    cfg = switches_from_env()
    steps, seed, mb = int(a["--steps"]), int(a["--seed"]), int(a["--micro-batch"])
    ga = int(a["--grad-accum"])
    result, hb = a["--result"], a["--heartbeat"]
    fault = os.environ.get("FAKE_FAULT", "")
    for rule in filter(None, os.environ.get("FAKE_FAULT_IF", "").split(",")):
        cond, what = rule.split(":", 1)
        name, value = cond.split("=", 1)
        if cfg.get(name) == value:
            fault = what
    sleep = float(os.environ.get("FAKE_STEP_SLEEP", "0"))

    def heartbeat(step):
        if hb and fault == "deep_heartbeat":
            atomic_write(hb, "[" * 30000 + "]" * 30000)
        elif hb:
            atomic_write(hb, json.dumps({"pid": os.getpid(), "step": step, "time": time.time()}))

    heartbeat(-1)
    if fault in ("setsid_grandchild", "setsid_hang"):
        start_grandchildren()
        if fault == "setsid_hang":
            hang_ignoring_term()
        fault = ""
    if fault == "ignore_term":
        hang_ignoring_term()
    once = os.environ.get("FAKE_SLEEP_ONCE_IF", "")  # "SWITCH:marker-path"
    if once:
        name, marker = once.split(":", 1)
        if name in cfg and cfg[name] != "0" and cfg[name] != "-1" and not os.path.exists(marker):
            open(marker, "w").close()
            for _ in range(60):
                time.sleep(0.5)
                heartbeat(-1)
    if fault == "big_output":
        chunk = "x" * 1023 + "\n"
        for _ in range(10 * 1024):  # 10 MiB: far more than any pipe buffer
            sys.stdout.write(chunk)
        sys.stdout.flush()
    if fault == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if fault == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if fault in ("hang_grandchild", "exit_grandchild"):
        subprocess.Popen(["sleep", "300"])  # inherits stdout/stderr: holds the pipes
        if fault == "exit_grandchild":
            fault = ""
        else:
            fault = "hang"
    if fault == "hang":
        while True:
            time.sleep(1)
    if fault == "oom":
        sys.stderr.write("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
        atomic_write(result, json.dumps({"protocol": 1, "status": "oom", "error": "CUDA out of memory"}))
        sys.exit(3)
    if fault == "crash":
        sys.stderr.write("fake: boom\n")
        sys.exit(1)

    tol = any(on(cfg, n) for n in ("FAST_MISS",)) or cfg.get("ATTN", "math") != "math"
    nondet = os.environ.get("FAKE_NONDETERMINISTIC") == "1"
    records = []
    loss = 0.0
    for t in range(steps):
        if sleep:
            time.sleep(sleep)
        loss = 2.0 * math.exp(-0.15 * t) + 0.02 * unit("loss", seed, t)
        gn = 1.0 + 0.05 * unit("gn", seed, t)
        if tol:
            loss += 0.0005 * unit("tol", seed, t)
        if on(cfg, "ACCUM_BUG"):
            gn *= 4.0
            loss += 0.0005 * unit("acc", seed, t)
        if on(cfg, "PAIR_A") and on(cfg, "PAIR_B"):
            loss += 0.5  # outside any seed band: both gate classes fail
        if cfg.get("KERNEL_ROPE") and cfg["KERNEL_ROPE"] == os.environ.get("FAKE_KERNEL_DRIFT"):
            loss += 1e-6  # a variant that is not bitwise in training
        target_drift = os.environ.get("FAKE_TARGET_DRIFT", "")
        if target_drift and mb >= 32 and cfg.get(target_drift.split("=", 1)[0]) == target_drift.split("=", 1)[1]:
            loss += 1e-6  # bitwise at small batches only
        if nondet:
            loss += 1e-4 * unit("nd", time.time_ns(), t)
        lf = f32(loss)
        if on(cfg, "BAD_BITS"):
            lf = struct.unpack(">f", struct.pack(">I", struct.unpack(">I", struct.pack(">f", lf))[0] ^ 1))[0]
        if fault == "nan" and t == steps - 1:
            lf = float("nan")
        records.append({"step": t, "loss": lf, "loss_bits": bits(lf), "grad_norm": f32(gn),
                        "grad_norm_bits": bits(f32(gn)), "seconds": 0.001})
        heartbeat(t)
    if fault == "nan":
        sys.stderr.write("fake: non-finite loss at step %d\n" % (steps - 1))
        atomic_write(result, json.dumps({"protocol": 1, "status": "nan", "error": "loss is nan"}))
        sys.exit(4)
    state = [seed, steps, mb, ga, tol, on(cfg, "ACCUM_BUG"), on(cfg, "BAD_BITS"),
             on(cfg, "PAIR_A") and on(cfg, "PAIR_B"), [r["loss_bits"] for r in records],
             cfg.get("KERNEL_ROPE") == os.environ.get("FAKE_KERNEL_DRIFT", "-")]
    pd = hashlib.sha256(("p" + repr(state)).encode()).hexdigest()
    od = hashlib.sha256(("o" + repr(state)).encode()).hexdigest()
    speed = 100.0
    for name, val in cfg.items():
        speed *= SPEED.get(name, {}).get(val, 1.0)
    for item in filter(None, os.environ.get("FAKE_TARGET_SPEED", "").split(",")):
        cond, factor = item.rsplit(":", 1)
        name, val = cond.split("=", 1)
        if mb >= 32 and cfg.get(name) == val:
            speed *= float(factor)
    lucky = os.environ.get("FAKE_LUCKY_ONCE", "")
    if lucky:
        cond, factor, marker = lucky.split(":", 2)
        name, val = cond.split("=", 1)
        if mb >= 32 and cfg.get(name) == val and not os.path.exists(marker):
            open(marker, "w").close()
            speed *= float(factor)
    for r in records:  # step times in proportion to samples/s (speed is judged on their ratios),
        r["seconds"] = mb * ga / speed / 1000  # scaled to fit the few ms this process really runs
    act = int(2.5 * GiB * mb * ACT_FACTOR.get(cfg.get("CKPT_LAYERS", "-1"), 1.0))
    bd = {"parameters": 1 * GiB, "gradients": 1 * GiB, "optimizer": 2 * GiB, "frozen": 2 * GiB, "activations": act}
    peak = sum(bd.values()) + GiB // 2
    device_gib = os.environ.get("FAKE_DEVICE_GIB")
    if device_gib and peak > float(device_gib) * GiB:
        sys.stderr.write("RuntimeError: CUDA out of memory (peak %.1f GiB > %s GiB)\n" % (peak / GiB, device_gib))
        atomic_write(result, json.dumps({"protocol": 1, "status": "oom", "error": "CUDA out of memory"}))
        sys.exit(3)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    ev = f32(loss - 0.01)
    out = {"protocol": 1, "status": "ok", "error": "", "workload": a["--workload"], "size": a["--size"],
           "seed": seed, "steps": steps, "micro_batch": mb, "grad_accum": ga, "world_size": world,
           "switches": {"SG_" + k: v for k, v in cfg.items()}, "step_records": records,
           "param_digest": pd, "optimizer_digest": od, "eval_loss": ev, "eval_loss_bits": bits(ev),
           "samples_per_s": speed, "tokens_per_s": speed * 48, "steady_state_steps": max(0, steps - 2),
           "model_flops_per_step": 1e9 * mb,
           "memory": {"device": "cpu", "peak_allocated_bytes": [peak], "peak_reserved_bytes": [peak + GiB],
                      "breakdown": bd},
           "fingerprint": {"device": "cpu", "device_name": "fake", "sm_count": 0, "driver": "", "cuda": "",
                           "cudnn": "", "nccl": "", "torch": "none", "git_sha": "fake",
                           "threads": int(a["--threads"]), "deterministic": True, "world_size": world}}
    patch_result(out, fault)
    text = json.dumps(out)
    if fault == "deep":
        text = text[:-1] + ', "extra": ' + "[" * 100000 + "]" * 100000 + "}"
    if fault == "no_result":
        sys.exit(0)
    if fault == "empty":
        open(result, "w").close()
        sys.exit(0)
    if fault == "partial":
        with open(result, "w") as f:
            f.write(text[: len(text) // 2])
        sys.exit(0)
    if fault == "garbage":
        with open(result, "wb") as f:
            f.write(b"\x00\xff garbage {{{")
        sys.exit(0)
    if fault == "wrong_schema":
        del out["step_records"]
        text = json.dumps(out)
    atomic_write(result, text)
    sys.exit(0)


def patch_result(out, fault):
    """FAKE_FAULT's lies and FAKE_RESULT_PATCH applied to an ok result."""
    if fault == "lie_seed":
        out["seed"] += 1
    if fault == "nan_ok":
        out["step_records"][-1]["loss"] = None
        out["step_records"][-1]["loss_bits"] = "7fc00000"
    if fault == "huge":
        out["extra"] = {"pad": ["x" * 60000] * 300}
    if fault == "long_string":
        out["error"] = "e" * (100 << 10)
    for key, value in json.loads(os.environ.get("FAKE_RESULT_PATCH", "{}")).items():
        *parents, last = key.split(".")
        obj = out
        for p in parents:
            obj = obj[int(p)] if isinstance(obj, list) else obj[p]
        if isinstance(obj, list):
            obj[int(last)] = value
        elif value is None:
            obj.pop(last, None)
        else:
            obj[last] = value


def kernel_trial(argv):
    """`kernel-trial` (protocol section 5) for the ROPE family."""
    args, variants, i = {}, [], 0
    while i < len(argv):
        if not argv[i].startswith("--") or i + 1 >= len(argv):
            sys.stderr.write("fake: bad argument %s\n" % argv[i])
            sys.exit(2)
        if argv[i] == "--variant":
            variants.append(argv[i + 1])
        else:
            args[argv[i]] = argv[i + 1]
        i += 2
    if "--result" not in args or args.get("--family") != "ROPE" or not KERNELS:
        sys.stderr.write("fake: kernel-trial needs --result, --family ROPE and FAKE_KERNELS=1\n")
        sys.exit(2)
    for v in variants:
        if v not in KERNEL_US:
            sys.stderr.write("fake: --variant %s: unknown parameter string\n" % v)
            sys.exit(2)
    if os.environ.get("FAKE_FAULT") == "crash":
        sys.exit(1)
    mismatch = os.environ.get("FAKE_KERNEL_MISMATCH")
    rows = [{"variant": "plain_aten" if v == "plain" else "fused_cuda", "params": v, "fwd_us": KERNEL_US[v] / 3,
             "fwdbwd_us": KERNEL_US[v], "matches_plain": v != mismatch,
             "ops": [{"op": "rope fp32", "fwd_us": KERNEL_US[v] / 3, "fwdbwd_us": KERNEL_US[v]}]}
            for v in (variants or list(KERNEL_US))]
    atomic_write(args["--result"], json.dumps({
        "protocol": 1, "kind": "kernel_trial", "status": "ok", "error": "", "workload": args.get("--workload"),
        "size": args.get("--size"), "micro_batch": int(args.get("--micro-batch", "2")), "family": "ROPE",
        "device": "cpu", "warmup": 5, "repeats": int(args.get("--repeats", "31")), "ops": ["rope fp32"],
        "variants": rows, "fingerprint": {"device": "cpu", "device_name": "fake", "torch": "none"}}))
    sys.exit(0)


def main():
    record_start()
    if len(sys.argv) >= 2 and sys.argv[1] == "describe" and os.environ.get("FAKE_DESCRIBE") == "hang":
        start_grandchildren(hold_stdout=True)
        hang_ignoring_term()
    if len(sys.argv) >= 2 and sys.argv[1] == "describe":
        print(json.dumps(manifest(), indent=1))
        return
    if len(sys.argv) >= 2 and sys.argv[1] == "run":
        run(sys.argv[2:])
        return
    if len(sys.argv) >= 2 and sys.argv[1] == "kernel-trial":
        kernel_trial(sys.argv[2:])
        return
    sys.stderr.write("usage: fake_trainer.py describe --json | run ...\n")
    sys.exit(2)


if __name__ == "__main__":
    main()
