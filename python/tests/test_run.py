"""speedgate_trainer's command line and run context, driven through a toy trainer as the
controller drives a trainer: as a subprocess."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOY = os.path.join(HERE, "toy_trainer.py")
REQUIRED = {"protocol", "status", "error", "seed", "steps", "micro_batch", "step_records",
            "param_digest", "optimizer_digest", "eval_loss_bits", "samples_per_s", "memory",
            "fingerprint"}


def env(**more):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("SG_") and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "FAULT")}
    e.update(more)
    return e


class RunTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sg_lib_test_")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.result = os.path.join(self.tmp, "r.json")

    def toy(self, *args, **environ):
        return subprocess.run([sys.executable, TOY] + list(args), env=env(**environ), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)

    def run_toy(self, *extra, steps=4, **environ):
        proc = self.toy("run", "--workload", "reg", "--size", "s", "--steps", str(steps), "--seed",
                        "0", "--micro-batch", "4", "--grad-accum", "1", "--threads", "1",
                        "--result", self.result, *extra, **environ)
        result = None
        if os.path.exists(self.result):
            with open(self.result, encoding="utf-8") as f:
                result = json.load(f)
        return proc, result

    def test_describe_prints_only_the_manifest(self):
        proc = self.toy("describe", "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        m = json.loads(proc.stdout)               # fails if anything else reached stdout
        self.assertIn("building the model prints", proc.stderr)
        self.assertIn("C-level chatter", proc.stderr)
        self.assertEqual((m["protocol"], m["trainer"], m["capabilities"]), (1, "toy", ["perturb"]))
        self.assertEqual([w["name"] for w in m["workloads"]], ["reg", "other"])
        size = m["workloads"][0]["sizes"][1]
        self.assertEqual((size["name"], size["trainable_params"], size["default_micro_batch"]),
                         ("m", 6, 4))
        self.assertEqual([s["name"] for s in m["switches"]], ["FOREACH", "WIDTH", "MODE", "GPU_ONLY"])

    def test_result_has_what_the_controller_requires(self):
        hb = os.path.join(self.tmp, "hb.json")
        proc, r = self.run_toy("--heartbeat", hb, "--warmup-steps", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertLessEqual(REQUIRED, set(r))
        self.assertEqual((r["status"], r["steps"], r["perturb"], r["steady_state_steps"]), ("ok", 4, 0.0, 3))
        self.assertEqual([s["step"] for s in r["step_records"]], [0, 1, 2, 3])
        for s in r["step_records"]:
            self.assertRegex(s["loss_bits"], "^[0-9a-f]{8}$")
            self.assertGreater(s["seconds"], 0)
        self.assertEqual(r["rank_param_digests"], [r["param_digest"]])
        self.assertRegex(r["eval_loss_bits"], "^[0-9a-f]{8}$")
        mem = r["memory"]
        self.assertEqual(sum(mem["breakdown"].values()), mem["peak_allocated_bytes"][0])
        self.assertEqual(mem["breakdown"]["parameters"], 4 * (3 * 8 + 8 + 8 + 1))
        self.assertGreater(mem["breakdown"]["activations"], 0)
        self.assertEqual((r["fingerprint"]["threads"], r["fingerprint"]["device"]), (1, "cpu"))
        self.assertEqual(r["switches"], {"SG_FOREACH": "0", "SG_WIDTH": "8", "SG_MODE": "a",
                                         "SG_GPU_ONLY": "0"})
        self.assertEqual(r["extra"], {"note": "toy"})
        with open(hb, encoding="utf-8") as f:
            self.assertEqual(json.load(f)["step"], 4)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["hb.json", "r.json"])

    def test_repeatable_and_perturbable(self):
        _, a = self.run_toy()
        _, b = self.run_toy("--perturb", "0")
        _, c = self.run_toy("--perturb", "0.00390625")
        _, d = self.run_toy(SG_FOREACH="1")
        bits = lambda r: [(s["loss_bits"], s["grad_norm_bits"]) for s in r["step_records"]]  # noqa: E731
        self.assertEqual((bits(a), a["param_digest"], a["optimizer_digest"]),
                         (bits(b), b["param_digest"], b["optimizer_digest"]))
        self.assertEqual((bits(a), a["param_digest"]), (bits(d), d["param_digest"]))
        self.assertNotEqual(bits(a)[0], bits(c)[0])
        self.assertEqual(c["perturb"], 0.00390625)

    def test_bad_input_exits_2_and_writes_nothing(self):
        preset = os.path.join(self.tmp, "p.env")
        with open(preset, "w", encoding="utf-8") as f:
            f.write("# x\nSG_WIDTH=4\n")
        cases = [((), {"SG_NOPE": "1"}, "SG_NOPE"),
                 ((), {"SG_GPU_ONLY": "1"}, "needs a GPU"),
                 (("--preset", preset), {}, "p.env:2"),
                 (("--perturb", "nan"), {}, "--perturb"),
                 (("--perturb", "-0.1"), {}, "--perturb"),
                 (("--threads", "0"), {}, "--threads"),
                 ((), {"WORLD_SIZE": "x"}, "WORLD_SIZE"),
                 ((), {"WORLD_SIZE": "2", "RANK": "0"}, "MASTER_ADDR")]
        for args, environ, mention in cases:
            with self.subTest(args=args, env=environ):
                proc, r = self.run_toy(*args, **environ)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertIn(mention, proc.stderr)
                self.assertIsNone(r)
        proc = self.toy("run", "--workload", "other", "--size", "m", "--steps", "1", "--seed", "0",
                        "--micro-batch", "1", "--grad-accum", "1", "--result", self.result)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--size", proc.stderr)
        proc = self.toy("run", "--workload", "other", "--size", "s", "--steps", "1", "--seed", "0",
                        "--micro-batch", "1", "--grad-accum", "1", "--result", self.result,
                        SG_MODE="b")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("workload other", proc.stderr)
        self.assertEqual(os.listdir(self.tmp), ["p.env"])

    def test_failures_map_to_exit_codes_with_a_result(self):
        for fault, code, status, records, why in [("nan", 4, "nan", 2, "step 1"),
                                                  ("oom", 3, "oom", 1, "out of memory"),
                                                  ("crash", 1, "error", 1, "synthetic failure"),
                                                  ("skip", 1, "error", 1, "recorded 1 steps of 4")]:
            with self.subTest(fault=fault):
                proc, r = self.run_toy(FAULT=fault)
                self.assertEqual(proc.returncode, code, proc.stderr)
                self.assertEqual((r["status"], len(r["step_records"])), (status, records))
                self.assertIn(why, r["error"])
                if fault == "nan":
                    self.assertIsNone(r["step_records"][-1]["loss"])
                    self.assertEqual(r["step_records"][-1]["loss_bits"][:3], "7fc")


if __name__ == "__main__":
    unittest.main()
