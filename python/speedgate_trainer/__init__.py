"""speedgate_trainer: make a PyTorch training script tunable by speedgate.

Declare switches as data, write train(ctx), and hand both to run_main():

    import speedgate_trainer as sg
    SWITCHES = [sg.Switch("FOREACH_OPTIM", identity="bitwise", doc="AdamW(foreach=True)")]
    sg.run_main(sg.Trainer("my-trainer", "0.1", [sg.Workload("lm", {"tiny": cfg}, describe)],
                           SWITCHES, train))

The contract it implements is docs/protocol.md (trainer protocol 1).
"""

from . import availability  # noqa: F401
from .cli import CAPABILITIES, Trainer, Workload, main, run_main, size_info, stdout_to_stderr
from .context import EXIT_CRASH, EXIT_NAN, EXIT_OK, EXIT_OOM, EXIT_USAGE, NonFiniteError, RunContext
from .files import heartbeat, write_atomic, write_json_atomic
from .numerics import (decimal, f32, f32_bits, is_oom, optimizer_digest, param_digest,
                       perturb_parameters, perturb_seed)
from .switches import SG_PREFIX, Switch, UsageError, read_preset, resolve

__version__ = "0.1.0"
