"""Tests of the Hugging Face Trainer example on speedgate_trainer.hf: each available
switch value keeps its declared identity class (bitwise: equal bits and digests;
tolerance: different but close), unavailable switches refuse a value, and the output
follows schemas/. Needs transformers: run with the venv of scripts/hf-venv.sh,

    .venv-hf/bin/python -m unittest discover -s examples/hf_trainer -p "test_train.py"
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "train.py")
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "tests"))
import schema_check  # noqa: E402
import trainer_test_util  # noqa: E402


class HfTrainerTest(trainer_test_util.ExampleTrainerCase):
    TRAIN = TRAIN
    tmp_prefix = "sg_hf_test_"

    def run_hf(self, expect=0, **switches):
        return self.run_cached(tuple(sorted(switches.items())),
                               ["--workload", "lm", "--size", "tiny", "--steps", "3", "--seed", "0",
                                "--micro-batch", "4", "--grad-accum", "1", "--threads", "1"],
                               expect, **switches)

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
        for spec in self.manifest["switches"]:
            if not spec["available"]:
                continue
            for value in spec["values"]:
                if value == spec["default"]:
                    continue
                r = self.run_hf(**{spec["env"]: value})
                with self.subTest(switch=spec["name"], value=value):
                    self.assert_identity_class(spec["identity"], base, r, loss_rel_tol=5e-2)

    def test_unavailable_switches_refuse_a_value(self):
        for spec in self.manifest["switches"]:
            if not spec["available"]:
                other = [v for v in spec["values"] if v != spec["default"]][0]
                with self.subTest(switch=spec["name"]):
                    self.assertIn(spec["env"], self.run_hf(expect=2, **{spec["env"]: other}))


if __name__ == "__main__":
    unittest.main()
