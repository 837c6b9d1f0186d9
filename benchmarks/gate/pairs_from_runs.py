#!/usr/bin/env python3
"""Turns the runs of benchmarks/gate/h200_gate_check.sh (result files named
mb<MICRO>_r<ROUND>_<NAME>.json) into recordings for speedgate-speed-replay: for each
micro-batch and each configuration NAME other than `default`, one evaluation whose pair r is
(default of round r, NAME of round r). `default_again` against `default` is the A/A pair.

    benchmarks/gate/pairs_from_runs.py RUNS_DIR OUT_DIR
"""
import json
import os
import re
import sys
from collections import defaultdict

NAME = re.compile(r"mb(\d+)_r(\d+)_(.+)\.json$")


def step_seconds(path):
    with open(path) as f:
        r = json.load(f)
    if r.get("status") != "ok":
        return None
    return [s["seconds"] for s in r.get("step_records", [])]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: pairs_from_runs.py RUNS_DIR OUT_DIR")
    runs, out = sys.argv[1], sys.argv[2]
    by = defaultdict(dict)  # (micro, name) -> round -> step seconds
    for f in sorted(os.listdir(runs)):
        m = NAME.match(f)
        if not m:
            continue
        secs = step_seconds(os.path.join(runs, f))
        if secs:
            by[(int(m.group(1)), m.group(3))][int(m.group(2))] = secs
    os.makedirs(out, exist_ok=True)
    for (micro, name), rounds in sorted(by.items()):
        if name == "default":
            continue
        base = by.get((micro, "default"), {})
        pairs = [{"base": base[r], "cand": rounds[r]} for r in sorted(rounds) if r in base]
        if not pairs:
            continue
        rec = {"trainer": "speedgate-train", "workload": "wam", "micro_batch": micro,
               "condition": f"GPU host, micro-batch {micro}, interleaved rounds",
               "effect": "none (A/A)" if name == "default_again" else name, "evaluations": [pairs]}
        path = os.path.join(out, f"mb{micro}_{name}.json")
        with open(path, "w") as f:
            json.dump(rec, f)
        print(f"{path}: {len(pairs)} pairs")


if __name__ == "__main__":
    main()
