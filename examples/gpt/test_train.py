"""Tests of the GPT example (train.py): each switch's declared identity class holds on this
torch (bitwise: equal bits and digests; tolerance: different but close), unavailable
switches refuse a non-default value, accumulation averages, and the output follows
schemas/. CPU, Debian's python3-torch or torch 2.x:

    python3 -m unittest discover -s examples/gpt -p "test_train.py"
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "train.py")
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "python", "tests")]
import schema_check  # noqa: E402
import train  # noqa: E402


def env(**switches):
    e = {k: v for k, v in os.environ.items() if not k.startswith("SG_")}
    e.update(switches)
    return e


class GptTest(unittest.TestCase):
    runs = {}

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sg_gpt_test_")
        proc = subprocess.run([sys.executable, TRAIN, "describe", "--json"], env=env(),
                              stdout=subprocess.PIPE, text=True, check=True)
        cls.manifest = json.loads(proc.stdout)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_gpt(self, micro_batch=4, grad_accum=1, expect=0, **switches):
        key = (micro_batch, grad_accum, tuple(sorted(switches.items())))
        if key in self.runs:
            return self.runs[key]
        path = os.path.join(self.tmp, "%d.json" % len(self.runs))
        proc = subprocess.run([sys.executable, TRAIN, "run", "--workload", "gpt", "--size", "tiny",
                               "--steps", "3", "--seed", "0", "--micro-batch", str(micro_batch),
                               "--grad-accum", str(grad_accum), "--threads", "1", "--result", path],
                              env=env(**switches), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=600)
        self.assertEqual(proc.returncode, expect, proc.stderr[-2000:])
        if expect:
            self.assertFalse(os.path.exists(path))
            return proc.stderr
        with open(path, encoding="utf-8") as f:
            self.runs[key] = json.load(f)
        return self.runs[key]

    def test_manifest_follows_the_schema(self):
        self.assertEqual(schema_check.errors(self.manifest, "manifest.schema.json"), [])
        self.assertEqual([s["name"] for s in self.manifest["switches"]], [s.name for s in train.SWITCHES])

    def test_each_available_switch_keeps_its_identity_class(self):
        base = self.run_gpt()
        self.assertEqual(schema_check.errors(base, "result.schema.json"), [])
        bits = lambda r: [(s["loss_bits"], s["grad_norm_bits"]) for s in r["step_records"]]  # noqa: E731
        for spec in self.manifest["switches"]:
            if not spec["available"]:
                continue
            r = self.run_gpt(**{spec["env"]: "1"})
            with self.subTest(switch=spec["name"]):
                if spec["identity"] == "bitwise":
                    self.assertEqual(bits(r), bits(base))
                    self.assertEqual(r["param_digest"], base["param_digest"])
                    self.assertEqual(r["optimizer_digest"], base["optimizer_digest"])
                    self.assertEqual(r["eval_loss_bits"], base["eval_loss_bits"])
                else:
                    self.assertNotEqual(bits(r), bits(base), "declared tolerance but bitwise")
                    for x, y in zip(base["step_records"], r["step_records"]):
                        self.assertAlmostEqual(x["loss"], y["loss"], delta=1e-2 * x["loss"])

    def test_unavailable_switches_refuse_a_value(self):
        for spec in self.manifest["switches"]:
            if not spec["available"]:
                with self.subTest(switch=spec["name"]):
                    self.assertIn(spec["env"], self.run_gpt(expect=2, **{spec["env"]: "1"}))

    def test_accumulation_averages(self):
        a, b = self.run_gpt(micro_batch=2, grad_accum=2), self.run_gpt(micro_batch=4)
        for x, y in zip(a["step_records"], b["step_records"]):
            self.assertAlmostEqual(x["loss"], y["loss"], delta=1e-4 * x["loss"])
            self.assertAlmostEqual(x["grad_norm"] / y["grad_norm"], 1.0, delta=1e-3)


if __name__ == "__main__":
    unittest.main()
