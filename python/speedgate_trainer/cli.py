"""The trainer's command line: `describe --json` and `run` (docs/protocol.md sections 1-2)."""

import argparse
import contextlib
import io
import json
import math
import os
import sys

from .context import EXIT_OK, EXIT_USAGE, RunContext
from .switches import UsageError, resolve

CAPABILITIES = ["perturb"]


class Workload:
    """A workload name and its sizes. `sizes` maps a size name to the trainer's own
    configuration; `describe(name, config)` returns the size's manifest fields (build the
    model there: it runs only for `describe`, e.g. through size_info())."""

    def __init__(self, name, sizes, describe):
        self.name, self.sizes, self.describe = name, dict(sizes), describe


def size_info(model, model_flops_per_sample, tokens_per_sample, default_micro_batch, **more):
    """Manifest fields of one size, parameters counted from `model`."""
    info = {"trainable_params": sum(p.numel() for p in model.parameters() if p.requires_grad),
            "frozen_params": sum(p.numel() for p in model.parameters() if not p.requires_grad),
            "model_flops_per_sample": float(model_flops_per_sample),
            "tokens_per_sample": tokens_per_sample,
            "default_micro_batch": int(default_micro_batch)}
    info.update(more)
    return info


class Trainer:
    """Everything `describe` says and `run` does. train(ctx) trains (see context.py).
    device: "cpu", or "auto" for cuda:LOCAL_RANK when a GPU is visible."""

    def __init__(self, name, version, workloads, switches, train, device="cpu", prog=None):
        self.name, self.version, self.train = name, version, train
        self.workloads = {w.name: w for w in workloads}
        self.switches, self.device = list(switches), device
        self.prog = prog or os.path.basename(sys.argv[0]) or name
        names = [s.name for s in self.switches]
        if len(set(names)) != len(names):
            raise ValueError("duplicate switch names in %s" % names)

    def manifest(self):
        import torch
        workloads = [{"name": w.name,
                      "sizes": [dict({"name": n}, **w.describe(n, cfg))
                                for n, cfg in w.sizes.items()]}
                     for w in self.workloads.values()]
        cuda = self.device != "cpu" and torch.cuda.is_available()
        return {"protocol": 1, "trainer": self.name, "version": self.version,
                "build": {"torch": torch.__version__, "cuda": cuda,
                          "git_sha": os.environ.get("SPEEDGATE_GIT_SHA", "")},
                "capabilities": list(CAPABILITIES),
                "workloads": workloads,
                "switches": [s.manifest_entry() for s in self.switches],
                "kernel_families": []}


@contextlib.contextmanager
def stdout_to_stderr():
    """Sends whatever is printed inside (Python or C level) to stderr, so stdout carries
    only the manifest. Yields the original stdout."""
    original = sys.stdout
    original.flush()
    try:
        fd = original.fileno()
    except (AttributeError, ValueError, io.UnsupportedOperation):
        fd = None
    saved = os.dup(fd) if fd is not None else None
    if saved is not None:
        os.dup2(sys.stderr.fileno(), fd)
    sys.stdout = sys.stderr
    try:
        yield original
    finally:
        sys.stdout.flush()
        sys.stdout = original
        if saved is not None:
            os.dup2(saved, fd)
            os.close(saved)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print("%s: error: %s" % (self.prog, message), file=sys.stderr)
        sys.exit(EXIT_USAGE)


def _int_at_least(low):
    def parse(text):
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not an integer" % text)
        if v < low:
            raise argparse.ArgumentTypeError("must be >= %d" % low)
        return v
    return parse


def _epsilon(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number" % text)
    if not math.isfinite(v) or not 0 <= v < 1:
        raise argparse.ArgumentTypeError("must be a finite number in [0, 1)")
    return v


def parse_args(trainer, argv):
    parser = _Parser(prog=trainer.prog,
                     description="%s (speedgate trainer protocol 1)" % trainer.name)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    d = sub.add_parser("describe", help="print the manifest")
    d.add_argument("--json", action="store_true", required=True)
    r = sub.add_parser("run", help="train and write a result file")
    r.add_argument("--workload", required=True, choices=list(trainer.workloads))
    r.add_argument("--size", required=True)
    r.add_argument("--steps", required=True, type=_int_at_least(1))
    r.add_argument("--seed", required=True, type=_int_at_least(0))
    r.add_argument("--micro-batch", required=True, type=_int_at_least(1))
    r.add_argument("--grad-accum", required=True, type=_int_at_least(1))
    r.add_argument("--result", required=True)
    r.add_argument("--preset")
    r.add_argument("--heartbeat")
    r.add_argument("--threads", type=_int_at_least(1), default=2)
    r.add_argument("--warmup-steps", type=_int_at_least(0), default=2)
    r.add_argument("--eval-batches", type=_int_at_least(0), default=2)
    r.add_argument("--perturb", type=_epsilon, default=0.0, metavar="EPS",
                   help="scale each trainable element by 1 +- EPS before step 0")
    args = parser.parse_args(argv)
    if args.command == "run" and args.size not in trainer.workloads[args.workload].sizes:
        parser.error("argument --size: invalid choice: %r for workload %s (choose from %s)" % (
            args.size, args.workload, ", ".join(trainer.workloads[args.workload].sizes)))
    return args


def main(trainer, argv=None, environ=None):
    """Runs one protocol command; returns the exit code (argparse errors exit 2 itself)."""
    argv = sys.argv[1:] if argv is None else argv
    environ = os.environ if environ is None else environ
    args = parse_args(trainer, argv)
    if args.command == "describe":
        with stdout_to_stderr() as out:
            text = json.dumps(trainer.manifest(), indent=1)
        print(text, file=out)
        out.flush()
        return EXIT_OK
    try:
        values = resolve(trainer.switches, environ, args.preset, args.workload)
        ctx = RunContext(trainer, args, values, environ)
    except UsageError as e:
        print("%s: %s" % (trainer.prog, e), file=sys.stderr)
        return EXIT_USAGE
    return ctx.execute(trainer.train)


def run_main(trainer):
    """`sys.exit(main(trainer))`, for a script's `if __name__ == "__main__":`."""
    sys.exit(main(trainer))
