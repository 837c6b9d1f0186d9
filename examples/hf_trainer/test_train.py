"""Tests of the Hugging Face Trainer example on speedgate_trainer.hf: each available
switch value keeps its declared identity class (bitwise: equal bits and digests;
tolerance: different but close), unavailable switches refuse a value, and the output
follows schemas/. Needs transformers: run with the venv of scripts/hf-venv.sh,

    .venv-hf/bin/python -m unittest discover -s examples/hf_trainer -p "test_train.py"
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
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "tests"))
import schema_check  # noqa: E402


def env(**switches):
    e = {k: v for k, v in os.environ.items() if not k.startswith("SG_")}
    e.update(switches)
    return e


class HfTrainerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp, cls.runs = tempfile.mkdtemp(prefix="sg_hf_test_"), {}
        proc = subprocess.run([sys.executable, TRAIN, "describe", "--json"], env=env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.returncode == 0, proc.stderr
        cls.manifest = json.loads(proc.stdout)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_hf(self, expect=0, **switches):
        key = tuple(sorted(switches.items()))
        if key in self.runs:
            return self.runs[key]
        path = os.path.join(self.tmp, "%d.json" % len(self.runs))
        proc = subprocess.run([sys.executable, TRAIN, "run", "--workload", "lm", "--size", "tiny",
                               "--steps", "3", "--seed", "0", "--micro-batch", "4", "--grad-accum",
                               "1", "--threads", "1", "--result", path], env=env(**switches),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
        self.assertEqual(proc.returncode, expect, proc.stderr[-2000:])
        if expect:
            self.assertFalse(os.path.exists(path))
            return proc.stderr
        with open(path, encoding="utf-8") as f:
            self.runs[key] = json.load(f)
        return self.runs[key]

    def test_manifest_and_result_follow_the_schemas(self):
        self.assertEqual(schema_check.errors(self.manifest, "manifest.schema.json"), [])
        r = self.run_hf()
        self.assertEqual(schema_check.errors(r, "result.schema.json"), [])
        self.assertEqual(r["status"], "ok")
        self.assertEqual(len(r["step_records"]), 3)

    def test_same_seed_twice_is_bitwise(self):
        a = self.run_hf()
        self.runs.pop((), None)
        b = self.run_hf()
        self.assertEqual([s["loss_bits"] for s in a["step_records"]],
                         [s["loss_bits"] for s in b["step_records"]])
        self.assertEqual(a["param_digest"], b["param_digest"])

    def test_each_available_switch_keeps_its_identity_class(self):
        base = self.run_hf()
        bits = lambda r: [(s["loss_bits"], s["grad_norm_bits"]) for s in r["step_records"]]  # noqa: E731
        for spec in self.manifest["switches"]:
            if not spec["available"]:
                continue
            for value in spec["values"]:
                if value == spec["default"]:
                    continue
                r = self.run_hf(**{spec["env"]: value})
                with self.subTest(switch=spec["name"], value=value):
                    if spec["identity"] == "bitwise":
                        self.assertEqual(bits(r), bits(base))
                        self.assertEqual(r["param_digest"], base["param_digest"])
                        self.assertEqual(r["eval_loss_bits"], base["eval_loss_bits"])
                    else:
                        self.assertNotEqual(bits(r), bits(base), "declared tolerance but bitwise")
                        for x, y in zip(base["step_records"], r["step_records"]):
                            self.assertAlmostEqual(x["loss"], y["loss"], delta=5e-2 * x["loss"])

    def test_unavailable_switches_refuse_a_value(self):
        for spec in self.manifest["switches"]:
            if not spec["available"]:
                other = [v for v in spec["values"] if v != spec["default"]][0]
                with self.subTest(switch=spec["name"]):
                    self.assertIn(spec["env"], self.run_hf(expect=2, **{spec["env"]: other}))


if __name__ == "__main__":
    unittest.main()
