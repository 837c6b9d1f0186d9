#!/usr/bin/python3
"""Measurement, not a test: how far each test-only mutant (SPEEDGATE_ADAPTER_MUTANTS=1)
moves the loss curve from the default run, next to the rounding band that
`--perturb 2^-8` gives and the seed-to-seed band. Prints the Markdown table of README.md
("Mutants"). Usage: measure_mutants.py [--micro-batch B] [--steps N]
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ["SPEEDGATE_ADAPTER_MUTANTS"] = "1"
import train  # noqa: E402


def run(tmp, seed, micro_batch, steps, switch=None, perturb="0"):
    path = os.path.join(tmp, "r.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SG_")}
    if switch:
        env["SG_" + switch] = "1"
    subprocess.run([sys.executable, os.path.join(HERE, "train.py"), "run", "--workload", "cnn",
                    "--size", "tiny", "--steps", str(steps), "--seed", str(seed), "--micro-batch",
                    str(micro_batch), "--grad-accum", "1", "--threads", "1", "--perturb", perturb,
                    "--result", path], env=env, check=True)
    with open(path, encoding="utf-8") as f:
        return [s["loss"] for s in json.load(f)["step_records"]]


def rms(a, b, n):
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a[:n], b[:n])) / n)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--micro-batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=16)
    a = p.parse_args()
    short, long_ = 4, a.steps
    with tempfile.TemporaryDirectory() as tmp:
        base = {s: run(tmp, s, a.micro_batch, long_) for s in (0, 1000)}
        rows = [("seed 0 vs seed 1000 (seed band)", base[0], base[1000])]
        for seed in (0, 1000):
            rows.append(("`--perturb 0.00390625`, seed %d" % seed, base[seed],
                         run(tmp, seed, a.micro_batch, long_, perturb="0.00390625")))
        for spec in train.MUTANTS:
            rows.append(("`%s` (%s)" % (spec.name, spec.identity), base[0],
                         run(tmp, 0, a.micro_batch, long_, spec.name)))
    print("| run | RMS dev. %d steps | RMS dev. %d steps |" % (short, long_))
    print("|---|---|---|")
    for name, x, y in rows:
        print("| %s | %.3g | %.3g |" % (name, rms(x, y, short), rms(x, y, long_)))


if __name__ == "__main__":
    main()
