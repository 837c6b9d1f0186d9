"""Tests of the GPT example (train.py): each switch's declared identity class holds on this
torch (bitwise: equal bits and digests; tolerance: different but close), unavailable
switches refuse a non-default value, accumulation averages, and the output follows
schemas/. CPU, Debian's python3-torch or torch 2.x:

    python3 -m unittest discover -s examples/gpt -p "test_train.py"
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "train.py")
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "python", "tests")]
import schema_check  # noqa: E402
import trainer_test_util  # noqa: E402
import train  # noqa: E402


class GptTest(trainer_test_util.ExampleTrainerCase):
    TRAIN = TRAIN
    tmp_prefix = "sg_gpt_test_"

    def run_gpt(self, micro_batch=4, grad_accum=1, expect=0, **switches):
        return self.run_cached((micro_batch, grad_accum, tuple(sorted(switches.items()))),
                               ["--workload", "gpt", "--size", "tiny", "--steps", "3", "--seed",
                                "0", "--micro-batch", str(micro_batch), "--grad-accum",
                                str(grad_accum), "--threads", "1"], expect, **switches)

    def test_manifest_follows_the_schema(self):
        self.assertEqual(schema_check.errors(self.manifest, "manifest.schema.json"), [])
        self.assertEqual([s["name"] for s in self.manifest["switches"]], [s.name for s in train.SWITCHES])

    def test_each_available_switch_keeps_its_identity_class(self):
        base = self.run_gpt()
        self.assertEqual(schema_check.errors(base, "result.schema.json"), [])
        for spec in self.manifest["switches"]:
            if not spec["available"]:
                continue
            r = self.run_gpt(**{spec["env"]: "1"})
            with self.subTest(switch=spec["name"]):
                self.assert_identity_class(
                    spec["identity"], base, r, loss_rel_tol=1e-2,
                    same=("param_digest", "optimizer_digest", "eval_loss_bits"))

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
