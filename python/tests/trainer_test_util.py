"""Helpers shared by the trainer tests in python/tests and examples/: a trainer's
environment without speedgate switches, a temp dir per test class, and `run` results
of a Python trainer script cached per configuration."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest


def trainer_env(**switches):
    """os.environ without SG_* switches, plus `switches`."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("SG_")}
    e.update(switches)
    return e


def describe(train):
    """The manifest of `python train describe --json`; raises when it fails."""
    proc = subprocess.run([sys.executable, train, "describe", "--json"], env=trainer_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise AssertionError(proc.stderr)
    return json.loads(proc.stdout)


class TempDirCase(unittest.TestCase):
    """cls.tmp: a temp dir made before the class's tests and removed after them."""
    tmp_prefix = "sg_test_"

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix=cls.tmp_prefix)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)


class CachedRunCase(TempDirCase):
    """Runs `python TRAIN run ARGS --result PATH` once per key (cached in cls.runs) and
    returns the parsed result; with expect != 0 checks that no result was written and
    returns stderr instead."""
    TRAIN = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.runs = {}

    def run_cached(self, key, args, expect=0, **switches):
        if key in self.runs:
            return self.runs[key]
        path = os.path.join(self.tmp, "%d.json" % len(self.runs))
        proc = subprocess.run([sys.executable, self.TRAIN, "run"] + args + ["--result", path],
                              env=trainer_env(**switches), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=600)
        self.assertEqual(proc.returncode, expect, proc.stderr[-2000:])
        if expect:
            self.assertFalse(os.path.exists(path))
            return proc.stderr
        with open(path, encoding="utf-8") as f:
            self.runs[key] = json.load(f)
        return self.runs[key]


class ExampleTrainerCase(CachedRunCase):
    """A CachedRunCase over an example trainer: cls.manifest is its `describe --json`."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.manifest = describe(cls.TRAIN)

    def assert_identity_class(self, identity, base, r, loss_rel_tol,
                              same=("param_digest", "eval_loss_bits")):
        """Run r (a switch set) against base (the default) as the switch's declared class
        says: bitwise, every step's loss and grad-norm bits and the `same` fields equal;
        tolerance, other step bits and every step's loss within loss_rel_tol of base's."""
        def bits(res):
            return [(s["loss_bits"], s["grad_norm_bits"]) for s in res["step_records"]]
        if identity == "bitwise":
            self.assertEqual(bits(r), bits(base))
            for key in same:
                self.assertEqual(r[key], base[key])
        else:
            self.assertNotEqual(bits(r), bits(base), "declared tolerance but bitwise")
            for x, y in zip(base["step_records"], r["step_records"]):
                self.assertAlmostEqual(x["loss"], y["loss"], delta=loss_rel_tol * x["loss"])
