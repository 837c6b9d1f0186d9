#!/usr/bin/env python3
"""Records real ABAB speed pairs of a trainer for the speed rule's replays
(benchmarks/gate/README.md; replayed by speedgate-speed-replay and by the test
tests/agent/speed_replay_test.cpp). Each evaluation runs --pairs pairs: the baseline, then
the candidate (the same configuration for an A/A recording, else --cand SG_X=V...), and
keeps every run's per-step seconds. --load N runs N busy processes beside it (a loaded host).

    benchmarks/gate/record_pairs.py --trainer build/bin/speedgate-train --workload wam \
        --size tiny --steps 4 --evaluations 40 --pairs 8 --load 1 --out aa_loaded.json
"""
import argparse
import json
import multiprocessing
import os
import platform
import sys
import tempfile
import time

from trainer_runs import run_trainer


def busy(stop):
    x = 0
    while not stop.is_set():
        x = (x * 1103515245 + 12345) % 2147483648


def run_once(args, env_extra, result):
    r = run_trainer("record_pairs", args.trainer, args, args.steps, 0, env_extra, result)
    return [s["seconds"] for s in r["step_records"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trainer", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--size", required=True)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--micro-batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--evaluations", type=int, default=40)
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--base", action="append", default=[], help="SG_X=V for both sides")
    ap.add_argument("--cand", action="append", default=[], help="SG_X=V for the candidate only")
    ap.add_argument("--effect", default="none (A/A)", help="what the candidate changes, for the table")
    ap.add_argument("--load", type=int, default=0, help="busy processes running beside the recording")
    ap.add_argument("--condition", default="", help="free text for the table (default: derived)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    base_env = dict(kv.split("=", 1) for kv in args.base)
    cand_env = dict(base_env)
    cand_env.update(dict(kv.split("=", 1) for kv in args.cand))
    stop = multiprocessing.Event()
    hogs = [multiprocessing.Process(target=busy, args=(stop,), daemon=True) for _ in range(args.load)]
    for h in hogs:
        h.start()
    tmp = tempfile.mkdtemp(prefix="sg-pairs-")
    started = time.time()
    evaluations = []
    loads = []  # the host's 1-minute load average after each evaluation
    try:
        for e in range(args.evaluations):
            pairs = []
            for p in range(args.pairs):
                pairs.append({"base": run_once(args, base_env, os.path.join(tmp, "a.json")),
                              "cand": run_once(args, cand_env, os.path.join(tmp, "b.json"))})
            evaluations.append(pairs)
            loads.append(os.getloadavg()[0])
            print(f"record_pairs: evaluation {e + 1}/{args.evaluations} done", file=sys.stderr)
    finally:
        stop.set()
        for h in hogs:
            h.join()
    condition = args.condition or (f"{os.cpu_count()} cores, {args.load} busy process(es) beside it")
    out = {"trainer": args.trainer, "workload": args.workload, "size": args.size, "steps": args.steps,
           "threads": args.threads, "host": platform.node(), "condition": condition, "effect": args.effect,
           "base": args.base, "cand": args.cand, "seconds": round(time.time() - started, 1),
           "micro_batch": args.micro_batch,
           "load_average": {"min": min(loads, default=0), "mean": round(sum(loads) / max(1, len(loads)), 2),
                            "max": max(loads, default=0)},
           "evaluations": evaluations}
    with open(args.out, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
