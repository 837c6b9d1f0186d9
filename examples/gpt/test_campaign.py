"""A real `speedgate tune` campaign on the CPU over the GPT example: the controller tunes
a trainer written on speedgate_trainer, emits presets, and every preset holds only a
configuration the gate accepted (or none). Needs the built controller:
$SPEEDGATE_BIN_DIR/speedgate (default <repo>/build/bin)."""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
TRAIN = os.path.join(HERE, "train.py")
SPEEDGATE = os.path.join(os.environ.get("SPEEDGATE_BIN_DIR", os.path.join(REPO, "build", "bin")),
                         "speedgate")


def call(*args):
    e = {k: v for k, v in os.environ.items() if not k.startswith("SG_")}
    return subprocess.run([SPEEDGATE] + list(args), env=e, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=1800)


class GptCampaignTest(unittest.TestCase):
    def test_tune_the_gpt_example_and_emit_gated_presets(self):
        self.assertTrue(os.access(SPEEDGATE, os.X_OK), SPEEDGATE + " is not built")
        tmp = tempfile.mkdtemp(prefix="sg_gpt_campaign_")
        self.addCleanup(shutil.rmtree, tmp, True)
        presets = os.path.join(tmp, "presets")
        tune = call("tune", "--workload", "gpt", "--size", "tiny", "--db", os.path.join(tmp, "s.db"),
                    "--trainer", TRAIN, "--threads", "1", "--budget-trials", "30", "--steps", "4",
                    "--plan", "screen,greedy", "--presets-out", presets, "--json")
        self.assertEqual(tune.returncode, 0, tune.stderr[-4000:])
        summary = json.loads(tune.stdout)
        self.assertEqual(summary["campaign"]["trainer"], TRAIN)
        accepted = [e["config"] for e in summary["evaluations"] if e["disposition"] == "accepted"]

        manifest = json.loads(subprocess.run([sys.executable, TRAIN, "describe", "--json"],
                                             stdout=subprocess.PIPE, text=True, check=True).stdout)
        defaults = {s["name"]: s["default"] for s in manifest["switches"]}
        files = sorted(glob.glob(os.path.join(presets, "*.env")))
        self.assertTrue(files, "no preset emitted")
        for path in files:
            chosen = {}
            with open(path, encoding="utf-8") as f:
                for line in f:
                    line = line.strip()
                    if not line or line.startswith("#"):
                        continue
                    key, _, value = line.partition("=")
                    self.assertIn(key[3:], defaults, "%s: not the GPT example's switch: %s" % (path, line))
                    if value != defaults[key[3:]]:
                        chosen[key[3:]] = value
            with self.subTest(preset=os.path.basename(path)):
                self.assertTrue(not chosen or chosen in accepted,
                                "%s holds %s, which no accepted evaluation has (accepted: %s)"
                                % (path, chosen, accepted))
                check = call("presets", "check", path, "--trainer", TRAIN)
                self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.assertTrue(os.path.exists(os.path.join(presets, "README.md")))


if __name__ == "__main__":
    unittest.main()
