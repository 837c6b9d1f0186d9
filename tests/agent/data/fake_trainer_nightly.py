#!/usr/bin/env python3
"""fake_trainer.py with two knobs for the nightly tests (tests/agent/nightly_test.cpp),
both environment variables so one trainer path serves every night:
  FAKE_SPEED=SWITCH=VALUE:FACTOR[,...]  overrides a switch's throughput factor
                                        (e.g. TEXT_CACHE=1:1.0: the cache stopped helping);
  FAKE_DRIVER=TEXT                      reports this driver in the environment fingerprint
                                        (an upgraded driver: a different environment).
FAKE_TRIAL_LOG=PATH appends one line per `run` (the trainer runs really made).
Everything else is fake_trainer.py unchanged."""
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_trainer as fake  # noqa: E402

for item in filter(None, os.environ.get("FAKE_SPEED", "").split(",")):
    key, factor = item.rsplit(":", 1)
    name, value = key.split("=", 1)
    fake.SPEED.setdefault(name, {})[value] = float(factor)

_write = fake.atomic_write


def atomic_write(path, text):
    driver = os.environ.get("FAKE_DRIVER")
    if driver is not None:
        try:
            out = json.loads(text)
        except ValueError:
            out = None
        if isinstance(out, dict) and isinstance(out.get("fingerprint"), dict):
            out["fingerprint"]["driver"] = driver
            text = json.dumps(out)
    _write(path, text)


fake.atomic_write = atomic_write

if __name__ == "__main__":
    log = os.environ.get("FAKE_TRIAL_LOG")
    if log and len(sys.argv) >= 2 and sys.argv[1] == "run":
        with open(log, "a") as f:
            f.write(" ".join(sys.argv[2:]) + "\n")
    fake.main()
