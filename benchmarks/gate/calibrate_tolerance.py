#!/usr/bin/env python3
"""Measures what the tolerance gate compares (docs/controller.md, "Calibrating the tolerance
gate"): for a trainer, the deviation from its baseline at seed s0 of
  - the rounding band's runs (--perturb EPS at s0 and at a second seed, each against the
    plain run at its own seed),
  - the seed band's runs (other seeds against s0),
  - each switch given with --switch NAME=VALUE (run at s0 with SG_NAME=VALUE),
at every horizon in --steps, with the gate's metrics: loss-curve RMS, |eval loss delta| and
|log grad-norm ratio| (agent/gate/gate.cpp). Prints a Markdown table; a benchmark, not a test.

    benchmarks/gate/calibrate_tolerance.py --trainer build/bin/speedgate-train \
        --workload wam --size tiny --steps 8,32 --switch VAE_CHANNELS_LAST=1
"""
import argparse
import math
import os
import struct
import tempfile

from trainer_runs import run_trainer


def f32(bits):
    return struct.unpack(">f", bytes.fromhex(bits))[0]


def run(trainer, args, env_extra, result):
    steps, seed = env_extra.pop("__steps"), env_extra.pop("__seed")
    perturb = env_extra.pop("__perturb", 0)
    return run_trainer("calibrate", trainer, args, steps, seed, env_extra, result, perturb)


def deviation(a, b):
    la = [f32(s["loss_bits"]) for s in a["step_records"]]
    lb = [f32(s["loss_bits"]) for s in b["step_records"]]
    rms = math.sqrt(sum((x - y) ** 2 for x, y in zip(la, lb)) / len(la))
    ga = sum(f32(s["grad_norm_bits"]) for s in a["step_records"]) / len(la)
    gb = sum(f32(s["grad_norm_bits"]) for s in b["step_records"]) / len(lb)
    ev = abs(f32(a["eval_loss_bits"]) - f32(b["eval_loss_bits"])) if a.get("eval_loss_bits") else 0.0
    return rms, ev, abs(math.log(ga / gb))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trainer", required=True, help="trainer command (split like a shell would)")
    ap.add_argument("--workload", required=True)
    ap.add_argument("--size", required=True)
    ap.add_argument("--steps", default="4,16", help="comma-separated horizons")
    ap.add_argument("--seeds", default="0,1000,2000", help="s0 first; the second is the rounding band's")
    ap.add_argument("--micro-batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--perturb", type=float, default=1.0 / 256)
    ap.add_argument("--switch", action="append", default=[],
                    help="NAME=VALUE[,NAME=VALUE...] (one run with all of them), repeatable")
    ap.add_argument("--env", action="append", default=[], help="extra VAR=VALUE for every run")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    base_env = dict(e.split("=", 1) for e in args.env)
    tmp = tempfile.mkdtemp(prefix="sg-calibrate-")
    rows = []
    for steps in [int(s) for s in args.steps.split(",")]:
        def go(name, seed, extra=None, perturb=0):
            env = dict(base_env)
            env.update(extra or {})
            env.update({"__steps": steps, "__seed": seed, "__perturb": perturb})
            return run(args.trainer, args, env, os.path.join(tmp, f"{name}-{seed}-{steps}.json"))
        plain = {s: go("plain", s) for s in seeds[:2]}
        rounding = [deviation(go("perturb", s, perturb=args.perturb), plain[s]) for s in seeds[:2]]
        band = tuple(max(r[i] for r in rounding) for i in range(3))
        rows.append((steps, f"rounding band (--perturb {args.perturb:g}, {len(rounding)} seeds)", band, 1.0))
        for s in seeds[1:]:
            d = deviation(plain[s] if s in plain else go("plain", s), plain[seeds[0]])
            rows.append((steps, f"seed {s} vs {seeds[0]}", d, d[0] / band[0]))
        for sw in args.switch:
            env = {"SG_" + k: v for k, v in (kv.split("=", 1) for kv in sw.split(","))}
            d = deviation(go("sw-" + sw.replace(",", "+"), seeds[0], env), plain[seeds[0]])
            rows.append((steps, sw, d, d[0] / band[0]))
    print(f"trainer `{args.trainer}` {args.workload} {args.size}, micro-batch {args.micro_batch}, "
          f"threads {args.threads}\n")
    print("| steps | run | loss-curve RMS | eval | grad-norm log | RMS / rounding band |")
    print("|---:|---|---:|---:|---:|---:|")
    for steps, what, (rms, ev, gn), ratio in rows:
        print(f"| {steps} | {what} | {rms:.3g} | {ev:.3g} | {gn:.3g} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
