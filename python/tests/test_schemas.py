"""The JSON Schemas in schemas/ hold for what trainers write: speedgate-train's manifest,
run and kernel-trial results, the library's (toy trainer) and the PyTorch adapter's; and
they reject documents missing what the controller requires.

speedgate-train is looked up in $SPEEDGATE_BIN_DIR, else <repo>/build/bin; when it is
absent those tests skip, unless SPEEDGATE_REQUIRE_BIN=1 (as under CTest), where they fail.
"""

import copy
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import schema_check  # noqa: E402
import trainer_test_util  # noqa: E402

BIN = os.environ.get("SPEEDGATE_BIN_DIR", os.path.join(REPO, "build", "bin"))
TRAIN = os.path.join(BIN, "speedgate-train")


def call(cmd, **env):
    return subprocess.run(cmd, env=trainer_test_util.trainer_env(**env), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)


class SchemaTest(trainer_test_util.TempDirCase):
    tmp_prefix = "sg_schema_test_"

    def assertValid(self, document, schema):
        self.assertEqual(schema_check.errors(document, schema), [])

    def run_result(self, cmd, expect=0, **env):
        path = os.path.join(self.tmp, "r%d.json" % len(os.listdir(self.tmp)))
        proc = call(cmd + ["--result", path], **env)
        self.assertEqual(proc.returncode, expect, proc.stderr[-3000:])
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    def need_speedgate_train(self):
        if not os.access(TRAIN, os.X_OK):
            if os.environ.get("SPEEDGATE_REQUIRE_BIN") == "1":
                self.fail("%s is missing" % TRAIN)
            self.skipTest("%s not built" % TRAIN)

    # -- speedgate-train -------------------------------------------------------------------
    def test_speedgate_train_manifest(self):
        self.need_speedgate_train()
        proc = call([TRAIN, "describe", "--json"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertValid(json.loads(proc.stdout), "manifest.schema.json")

    def test_speedgate_train_run_result(self):
        self.need_speedgate_train()
        r = self.run_result([TRAIN, "run", "--workload", "wam", "--size", "tiny", "--steps", "2",
                             "--seed", "0", "--micro-batch", "1", "--grad-accum", "1",
                             "--threads", "1"])
        self.assertEqual(r["status"], "ok")
        self.assertValid(r, "result.schema.json")
        self.required_fields_are_enforced(r)

    def test_speedgate_train_kernel_trial_result(self):
        self.need_speedgate_train()
        r = self.run_result([TRAIN, "kernel-trial", "--workload", "wam", "--size", "tiny",
                             "--family", "ROPE", "--variant", "plain", "--repeats", "1",
                             "--warmup", "0", "--threads", "1"])
        self.assertEqual(r["status"], "ok")
        self.assertValid(r, "kernel_trial_result.schema.json")
        for field in ("kind", "family", "variants", "fingerprint"):
            broken = copy.deepcopy(r)
            del broken[field]
            self.assertTrue(schema_check.errors(broken, "kernel_trial_result.schema.json"), field)
        broken = copy.deepcopy(r)
        del broken["variants"][0]["matches_plain"]
        self.assertIn("matches_plain", "\n".join(
            schema_check.errors(broken, "kernel_trial_result.schema.json")))

    # -- the library and the adapter -------------------------------------------------------
    def test_library_manifest_and_results(self):
        toy = [sys.executable, os.path.join(HERE, "toy_trainer.py")]
        proc = call(toy + ["describe", "--json"])
        self.assertValid(json.loads(proc.stdout), "manifest.schema.json")
        run = toy + ["run", "--workload", "reg", "--size", "s", "--steps", "3", "--seed", "1",
                     "--micro-batch", "2", "--grad-accum", "1", "--threads", "1"]
        ok = self.run_result(run + ["--perturb", "0.001"])
        self.assertValid(ok, "result.schema.json")
        self.assertValid(self.run_result(run + ["--eval-batches", "0"]), "result.schema.json")
        for fault, code in (("nan", 4), ("oom", 3), ("crash", 1)):
            self.assertValid(self.run_result(run, expect=code, FAULT=fault), "result.schema.json")

    def test_adapter_manifest_and_result(self):
        adapter = [sys.executable, os.path.join(REPO, "examples", "pytorch_adapter", "train.py")]
        for mutants in ("0", "1"):
            proc = call(adapter + ["describe", "--json"], SPEEDGATE_ADAPTER_MUTANTS=mutants)
            self.assertValid(json.loads(proc.stdout), "manifest.schema.json")
        self.assertValid(self.run_result(adapter + [
            "run", "--workload", "cnn", "--size", "tiny", "--steps", "2", "--seed", "0",
            "--micro-batch", "4", "--grad-accum", "1", "--threads", "1"]), "result.schema.json")

    # -- the schemas can fail ----------------------------------------------------------------
    def required_fields_are_enforced(self, good):
        schema = "result.schema.json"
        for field in ("protocol", "status", "seed", "steps", "micro_batch", "step_records",
                      "param_digest", "optimizer_digest", "eval_loss_bits", "samples_per_s",
                      "memory", "fingerprint"):
            broken = copy.deepcopy(good)
            del broken[field]
            with self.subTest(missing=field):
                self.assertIn("'%s'" % field, "\n".join(schema_check.errors(broken, schema)))
        for path in (("memory", "breakdown"), ("memory", "peak_allocated_bytes"),
                     ("memory", "breakdown", "activations")):
            broken = copy.deepcopy(good)
            node = broken
            for key in path[:-1]:
                node = node[key]
            del node[path[-1]]
            with self.subTest(missing=path):
                self.assertIn(path[-1], "\n".join(schema_check.errors(broken, schema)))
        for field, value in (("samples_per_s", 0), ("step_records", []), ("param_digest", ""),
                             ("eval_loss_bits", "3F800000"), ("protocol", 2), ("status", "fine")):
            broken = dict(good, **{field: value})
            with self.subTest(bad=field):
                self.assertTrue(schema_check.errors(broken, schema))
        failed = {"protocol": 1, "status": "oom", "error": "out of memory"}
        self.assertValid(failed, schema)   # a failed run needs no more

    def test_manifest_schema_rejects_what_the_controller_refuses(self):
        good = {"protocol": 1, "workloads": [{"name": "w", "sizes": [{"name": "s"}]}],
                "switches": [{"name": "A", "env": "SG_A", "type": "int", "min": 0, "max": 4,
                              "values": ["1"], "default": "0", "identity": "bitwise",
                              "effect": "speed"}]}
        self.assertValid(good, "manifest.schema.json")
        cases = [("workloads", []), ("switches", [dict(good["switches"][0], type="float")]),
                 ("switches", [dict(good["switches"][0], identity="close")]),
                 ("switches", [{k: v for k, v in good["switches"][0].items() if k != "max"}]),
                 ("switches", [dict(good["switches"][0], type="bool")]),
                 ("switches", [dict(good["switches"][0], values=["a b"])]),
                 ("protocol", 2)]
        for field, value in cases:
            with self.subTest(field=field, value=value):
                self.assertTrue(schema_check.errors(dict(good, **{field: value}),
                                                    "manifest.schema.json"))


if __name__ == "__main__":
    unittest.main()
