"""Builds and runs one trainer `run` for the gate benchmarks (calibrate_tolerance.py,
record_pairs.py): the trainer command split like a shell would, its environment plus
`env_extra`; exits naming the command when the trainer fails."""
import json
import os
import shlex
import subprocess
import sys


def run_trainer(who, trainer, args, steps, seed, env_extra, result, perturb=0):
    """Runs `trainer run` with args.workload/size/micro_batch/threads at `steps` and `seed`
    and returns the parsed result written to `result`."""
    cmd = shlex.split(trainer) + ["run", "--workload", args.workload, "--size", args.size,
                                  "--steps", str(steps), "--seed", str(seed),
                                  "--micro-batch", str(args.micro_batch), "--grad-accum", "1",
                                  "--threads", str(args.threads), "--result", result]
    if perturb:
        cmd += ["--perturb", repr(perturb)]
    env = dict(os.environ)
    env.update(env_extra)
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"{who}: {' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
    with open(result) as f:
        return json.load(f)
