"""A real `speedgate tune` campaign over an example trainer, for the examples' campaign
tests: presets are emitted, hold only the trainer's switches, each preset's configuration
is one the gate accepted (or none), and `speedgate presets check` accepts them. Needs
the built controller: $SPEEDGATE_BIN_DIR/speedgate (default <repo>/build/bin).

`campaign_check.py TRAINER WORKLOAD SIZE TRIALS STEPS` runs the check as a unittest
(CTest gpt_campaign_test and hf_trainer_campaign_test)."""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SPEEDGATE = os.path.join(os.environ.get("SPEEDGATE_BIN_DIR", os.path.join(REPO, "build", "bin")),
                         "speedgate")


def _call(*args):
    e = {k: v for k, v in os.environ.items() if not k.startswith("SG_")}
    return subprocess.run([SPEEDGATE] + list(args), env=e, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=3000)


def tune_and_check(test, trainer, workload, size, trials, steps):
    test.assertTrue(os.access(SPEEDGATE, os.X_OK), SPEEDGATE + " is not built")
    tmp = tempfile.mkdtemp(prefix="sg_campaign_")
    test.addCleanup(shutil.rmtree, tmp, True)
    presets = os.path.join(tmp, "presets")
    tune = _call("tune", "--workload", workload, "--size", size, "--db", os.path.join(tmp, "s.db"),
                 "--trainer", trainer, "--threads", "1", "--budget-trials", str(trials),
                 "--steps", str(steps), "--plan", "screen,greedy", "--presets-out", presets,
                 "--json")
    test.assertEqual(tune.returncode, 0, tune.stderr[-4000:])
    summary = json.loads(tune.stdout)
    test.assertEqual(summary["campaign"]["trainer"], trainer)
    accepted = [e["config"] for e in summary["evaluations"] if e["disposition"] == "accepted"]
    manifest = json.loads(subprocess.run([trainer, "describe", "--json"], stdout=subprocess.PIPE,
                                         text=True, check=True).stdout)
    defaults = {s["name"]: s["default"] for s in manifest["switches"]}
    files = sorted(glob.glob(os.path.join(presets, "*.env")))
    test.assertTrue(files, "no preset emitted")
    for path in files:
        chosen = {}
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                key, _, value = line.partition("=")
                test.assertIn(key[3:], defaults, "%s: not the trainer's switch: %s" % (path, line))
                if value != defaults[key[3:]]:
                    chosen[key[3:]] = value
        print("%s: %s (accepted configurations: %s)" % (os.path.basename(path), chosen, accepted),
              file=sys.stderr)
        with test.subTest(preset=os.path.basename(path)):
            test.assertTrue(not chosen or chosen in accepted,
                            "%s holds %s, which no accepted evaluation has (accepted: %s)"
                            % (path, chosen, accepted))
            check = _call("presets", "check", path, "--trainer", trainer)
            test.assertEqual(check.returncode, 0, check.stdout + check.stderr)
    test.assertTrue(os.path.exists(os.path.join(presets, "README.md")))
    return summary


class CampaignTest(unittest.TestCase):
    """tune_and_check over the command line's TRAINER WORKLOAD SIZE TRIALS STEPS."""
    args = None

    def test_tune_and_emit_gated_presets(self):
        trainer, workload, size, trials, steps = self.args
        tune_and_check(self, os.path.abspath(trainer), workload, size, int(trials), int(steps))


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit("usage: campaign_check.py TRAINER WORKLOAD SIZE TRIALS STEPS")
    CampaignTest.args = sys.argv[1:]
    unittest.main(argv=sys.argv[:1])
