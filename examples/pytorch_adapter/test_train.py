"""Tests for the PyTorch protocol adapter (train.py). Plain unittest, CPU only:

    /usr/bin/python3 -m unittest discover -s examples/pytorch_adapter -p "test_*.py"

Most tests drive train.py as a subprocess exactly as the controller would; the exit-3/4
paths are provoked in-process by patching the script.
"""

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "train.py")
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "python", "tests")]
import train  # noqa: E402  (the switch table and helpers; torch is imported lazily)
import trainer_test_util  # noqa: E402

PROTOCOL_RESULT_KEYS = {
    "protocol", "status", "error", "workload", "size", "seed", "steps", "micro_batch",
    "grad_accum", "world_size", "switches", "step_records", "param_digest",
    "optimizer_digest", "eval_loss", "eval_loss_bits", "samples_per_s", "tokens_per_s",
    "steady_state_steps", "model_flops_per_step", "memory", "fingerprint", "extra",
    "perturb", "rank_param_digests"}
HEX32 = re.compile(r"[0-9a-f]{8}")


def clean_env(**switches):
    env = trainer_test_util.trainer_env()
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    env.update(switches)
    return env


class AdapterTest(trainer_test_util.TempDirCase):
    STEPS = 6
    _cache = {}
    tmp_prefix = "sg_adapter_test_"

    def invoke(self, args, env=None):
        return subprocess.run([sys.executable, TRAIN] + args, env=env or clean_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=300)

    def train(self, tag, seed=0, micro_batch=8, grad_accum=1, steps=None, extra=(), **switches):
        """Runs train.py once per distinct configuration; returns the parsed result."""
        key = (tag, seed, micro_batch, grad_accum, steps, tuple(extra), tuple(sorted(switches.items())))
        if key in AdapterTest._cache:
            return AdapterTest._cache[key]
        result = os.path.join(self.tmp, "%s_%d.json" % (tag, len(AdapterTest._cache)))
        proc = self.invoke(["run", "--workload", "cnn", "--size", "tiny",
                            "--steps", str(steps or self.STEPS), "--seed", str(seed),
                            "--micro-batch", str(micro_batch), "--grad-accum", str(grad_accum),
                            "--result", result] + list(extra), clean_env(**switches))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(result, encoding="utf-8") as f:
            AdapterTest._cache[key] = json.load(f)
        return AdapterTest._cache[key]

    def assertBitwise(self, a, b, what):
        for x, y in zip(a["step_records"], b["step_records"]):
            self.assertEqual((x["loss_bits"], x["grad_norm_bits"]),
                             (y["loss_bits"], y["grad_norm_bits"]), "%s: step %d" % (what, x["step"]))
        self.assertEqual(a["param_digest"], b["param_digest"], what)
        self.assertEqual(a["optimizer_digest"], b["optimizer_digest"], what)
        self.assertEqual(a["eval_loss_bits"], b["eval_loss_bits"], what)

    # -- describe ----------------------------------------------------------------
    def test_describe_manifest(self):
        proc = self.invoke(["describe", "--json"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        m = json.loads(proc.stdout)
        self.assertEqual(m["protocol"], 1)
        for key in ("trainer", "version", "build", "workloads", "switches", "kernel_families"):
            self.assertIn(key, m)
        self.assertEqual([w["name"] for w in m["workloads"]], ["cnn"])
        sizes = m["workloads"][0]["sizes"]
        self.assertEqual([s["name"] for s in sizes], ["tiny", "small"])
        for s in sizes:
            self.assertGreater(s["trainable_params"], 0)
            self.assertGreater(s["model_flops_per_sample"], 0)
            self.assertGreater(s["default_micro_batch"], 0)
        names = [s["name"] for s in m["switches"]]
        self.assertEqual(names, [s.name for s in train.SWITCHES])
        self.assertGreaterEqual(len(names), 3)
        for s in m["switches"]:
            self.assertEqual(s["env"], "SG_" + s["name"])
            self.assertIn(s["type"], ("bool", "int", "enum"))
            self.assertIn(s["identity"], ("bitwise", "tolerance"))
            self.assertIn(s["effect"], ("speed", "memory", "schedule"))
            self.assertIsInstance(s["default"], str)
            self.assertTrue(all(isinstance(v, str) for v in s["values"]))
            self.assertTrue(s["available"])
            if s["type"] == "bool":
                self.assertEqual(s["values"], ["0", "1"])
            if s["type"] == "int":
                self.assertTrue(all(s["min"] <= int(v) <= s["max"] for v in s["values"]))
            for req in s["requires"]:
                dep, _, value = req.partition("=")
                self.assertIn(dep, names)

    # -- result file -------------------------------------------------------------
    def test_result_follows_protocol(self):
        hb = os.path.join(self.tmp, "heartbeat.json")
        r = self.train("base", extra=["--heartbeat", hb])
        self.assertEqual(set(r), PROTOCOL_RESULT_KEYS)
        self.assertEqual(r["status"], "ok")
        self.assertEqual(len(r["step_records"]), self.STEPS)
        for i, rec in enumerate(r["step_records"]):
            self.assertEqual(rec["step"], i)
            self.assertRegex(rec["loss_bits"], HEX32)
            self.assertEqual(rec["loss_bits"], train.sg.f32_bits(rec["loss"]))
            self.assertEqual(rec["grad_norm_bits"], train.sg.f32_bits(rec["grad_norm"]))
        self.assertRegex(r["param_digest"], r"^[0-9a-f]{64}$")
        self.assertEqual(r["steady_state_steps"], self.STEPS - 2)
        self.assertGreater(r["samples_per_s"], 0)
        self.assertEqual(r["switches"], {s.env: s.default for s in train.SWITCHES})
        mem = r["memory"]
        self.assertEqual(len(mem["peak_allocated_bytes"]), 1)
        self.assertEqual(sum(mem["breakdown"].values()), mem["peak_allocated_bytes"][0])
        self.assertGreater(mem["peak_reserved_bytes"][0], mem["peak_allocated_bytes"][0])
        self.assertTrue(r["fingerprint"]["deterministic"])
        self.assertEqual(r["fingerprint"]["threads"], 2)
        with open(hb, encoding="utf-8") as f:
            beat = json.load(f)
        self.assertEqual(beat["step"], self.STEPS)
        self.assertEqual(set(beat), {"pid", "step", "time"})
        self.assertFalse([n for n in os.listdir(self.tmp) if ".tmp." in n], "temp files left behind")

    # -- determinism and switch classes ---------------------------------------------
    def test_same_seed_twice_is_bitwise(self):
        self.assertBitwise(self.train("base"), self.train("base_again"), "seed 0 twice")

    def test_different_seed_differs(self):
        self.assertNotEqual(self.train("base")["param_digest"], self.train("seed", seed=1000)["param_digest"])

    def test_bitwise_switches_match_default(self):
        base = self.train("base")
        for spec in train.SWITCHES:
            if spec.identity != "bitwise":
                continue
            for value in spec.values:
                if value == spec.default:
                    continue
                switches = {spec.env: value}
                for req in spec.requires:          # satisfy requires
                    dep, _, need = req.partition("=")
                    switches["SG_" + dep] = need
                with self.subTest(switches=switches):
                    self.assertBitwise(base, self.train("sw", **switches), str(switches))

    def test_all_bitwise_switches_together_match_default(self):
        switches = {"SG_DATA_CACHE": "1", "SG_CACHE_LIMIT": "32", "SG_FOREACH_OPTIM": "1"}
        self.assertBitwise(self.train("base"), self.train("sw", **switches), "all bitwise")

    def test_tolerance_switches_finite_and_close(self):
        base, other_seed = self.train("base"), self.train("seed", seed=1000)
        band = max(abs(x["loss"] - y["loss"]) for x, y in
                   zip(base["step_records"], other_seed["step_records"]))
        for spec in train.SWITCHES:
            if spec.identity != "tolerance":
                continue
            r = self.train("tol", **{spec.env: "1"})
            with self.subTest(switch=spec.name):
                self.assertEqual(r["status"], "ok")
                dev = 0.0
                for x, y in zip(base["step_records"], r["step_records"]):
                    self.assertTrue(all(map(lambda v: v == v and abs(v) < 1e30, (y["loss"], y["grad_norm"]))))
                    self.assertAlmostEqual(x["loss"], y["loss"], delta=1e-3 * abs(x["loss"]))
                    self.assertAlmostEqual(x["grad_norm"] / y["grad_norm"], 1.0, delta=1e-2)
                    dev = max(dev, abs(x["loss"] - y["loss"]))
                self.assertAlmostEqual(base["eval_loss"], r["eval_loss"], delta=1e-3)
                self.assertLess(dev, 0.1 * band, "deviation not inside the seed-to-seed band")

    # -- gradient accumulation ---------------------------------------------------
    def test_grad_accum_averages(self):
        accum = self.train("gas2", micro_batch=8, grad_accum=2, steps=3)
        whole = self.train("gas1", micro_batch=16, grad_accum=1, steps=3)
        for x, y in zip(accum["step_records"], whole["step_records"]):
            ratio = x["grad_norm"] / y["grad_norm"]
            self.assertTrue(0.99 <= ratio <= 1.01, "step %d grad-norm ratio %r" % (x["step"], ratio))
            self.assertAlmostEqual(x["loss"], y["loss"], delta=1e-4)
        self.assertEqual(accum["model_flops_per_step"], whole["model_flops_per_step"])

    def test_no_eval_batches_gives_null_eval_loss(self):
        r = self.train("noeval", steps=2, extra=["--eval-batches", "0"])
        self.assertIsNone(r["eval_loss"])
        self.assertEqual(r["eval_loss_bits"], "")
        # 2 steps <= 2 warm-up steps: throughput over all steps rather than none
        self.assertEqual(r["steady_state_steps"], 2)
        self.assertGreater(r["samples_per_s"], 0)

    def test_cache_counters_in_extra(self):
        bounded = self.train("sw", SG_DATA_CACHE="1", SG_CACHE_LIMIT="32")
        self.assertGreater(bounded["extra"]["cache_evictions"], 0)
        self.assertEqual(bounded["extra"]["cached_samples"], 32)
        # 10 steps x 8 samples > 64 training samples: the second epoch hits the cache.
        whole = self.train("cache10", steps=10, SG_DATA_CACHE="1")
        self.assertEqual(whole["extra"]["cache_hits"], 10 * 8 - 64)
        self.assertEqual(whole["extra"]["cache_evictions"], 0)

    # -- presets -----------------------------------------------------------------
    def write_preset(self, text):
        path = os.path.join(self.tmp, "preset_%d.env" % len(os.listdir(self.tmp)))
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_preset_applies_and_environment_wins(self):
        preset = self.write_preset("# provenance comment\n\nSG_DATA_CACHE=1\nSG_FOREACH_OPTIM=1\n")
        r = self.train("preset", steps=2, extra=["--preset", preset], SG_FOREACH_OPTIM="0")
        self.assertEqual(r["switches"]["SG_DATA_CACHE"], "1")
        self.assertEqual(r["switches"]["SG_FOREACH_OPTIM"], "0")

    # -- exit 2 --------------------------------------------------------------------
    def run_args(self, *extra):
        return ["run", "--workload", "cnn", "--size", "tiny", "--steps", "2", "--seed", "0",
                "--micro-batch", "4", "--grad-accum", "1",
                "--result", os.path.join(self.tmp, "never.json")] + list(extra)

    def assertExit2(self, proc, *mentions):
        self.assertEqual(proc.returncode, 2, proc.stderr)
        for m in mentions:
            self.assertIn(m, proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "never.json")))

    def test_unknown_switch_variable_exits_2(self):
        self.assertExit2(self.invoke(self.run_args(), clean_env(SG_NO_SUCH_SWITCH="1")), "SG_NO_SUCH_SWITCH")

    def test_out_of_domain_values_exit_2(self):
        for key, value in (("SG_DATA_CACHE", "2"), ("SG_DATA_CACHE", ""), ("SG_CACHE_LIMIT", "-1"),
                           ("SG_CACHE_LIMIT", "ten"), ("SG_CHANNELS_LAST", "yes")):
            with self.subTest(key=key, value=value):
                env = clean_env(**{key: value})
                if key == "SG_CACHE_LIMIT":
                    env["SG_DATA_CACHE"] = "1"
                self.assertExit2(self.invoke(self.run_args(), env), key)

    def test_unmet_requires_exits_2(self):
        self.assertExit2(self.invoke(self.run_args(), clean_env(SG_CACHE_LIMIT="32")),
                         "SG_CACHE_LIMIT", "SG_DATA_CACHE=1")

    def test_bad_preset_exits_2_naming_the_line(self):
        cases = [("SG_DATA_CACHE=1\nthis is not a line\n", ":2"),
                 ("# ok\nSG_WHAT=1\n", "SG_WHAT"),
                 ("SG_DATA_CACHE=maybe\n", "SG_DATA_CACHE"),
                 ("SG_DATA_CACHE=1\nSG_DATA_CACHE=0\n", "already set"),
                 ("SG_CACHE_LIMIT=64\n", "requires")]
        for text, mention in cases:
            with self.subTest(preset=text):
                preset = self.write_preset(text)
                self.assertExit2(self.invoke(self.run_args("--preset", preset)), preset, mention)
        self.assertExit2(self.invoke(self.run_args("--preset", os.path.join(self.tmp, "missing.env"))),
                         "missing.env")

    def test_bad_flags_exit_2(self):
        for args in (["run", "--workload", "cnn"], self.run_args("--threads", "0"),
                     ["run"] + self.run_args()[1:2] + ["nope"] + self.run_args()[3:], ["frobnicate"]):
            with self.subTest(args=args):
                self.assertEqual(self.invoke(args).returncode, 2)

    # -- exit 3 / 4 (provoked in-process) -------------------------------------------
    def run_in_process(self, patch_target, replacement):
        result = os.path.join(self.tmp, "inproc.json")
        args = self.run_args()[:-1] + [result]
        with mock.patch.dict(os.environ, clean_env(), clear=True), \
                mock.patch.object(train, patch_target, replacement), \
                contextlib.redirect_stderr(io.StringIO()):
            code = train.main(args)
        with open(result, encoding="utf-8") as f:
            return code, json.load(f)

    def test_non_finite_loss_exits_4(self):
        real_build = train.build_model

        def nan_model(torch, cfg):
            model = real_build(torch, cfg)
            with torch.no_grad():
                model[-1].bias.fill_(float("nan"))
            return model

        code, r = self.run_in_process("build_model", nan_model)
        self.assertEqual(code, 4)
        self.assertEqual(r["status"], "nan")
        self.assertIn("step 0", r["error"])
        last = r["step_records"][-1]
        self.assertIsNone(last["loss"])                 # JSON has no NaN: decimal is null
        self.assertRegex(last["loss_bits"], HEX32)      # ... the bits stay exact
        self.assertEqual(last["loss_bits"][:3], "7fc")

    def test_caught_crash_writes_error_result(self):
        def broken(self, indices):
            raise ValueError("synthetic failure")

        code, r = self.run_in_process("Dataset", type("BrokenData", (train.Dataset,), {"batch": broken}))
        self.assertEqual(code, 1)
        self.assertEqual(r["status"], "error")
        self.assertIn("synthetic failure", r["error"])

    def test_out_of_memory_exits_3(self):
        def no_memory(self, indices):
            raise RuntimeError("[enforce fail at alloc_cpu.cpp:73] . DefaultCPUAllocator: "
                               "can't allocate memory: you tried to allocate 1 bytes.")

        code, r = self.run_in_process("Dataset", type("OomData", (train.Dataset,), {"batch": no_memory}))
        self.assertEqual(code, 3)
        self.assertEqual(r["status"], "oom")

    # -- --perturb -------------------------------------------------------------------
    def test_perturb_zero_is_bitwise_and_nonzero_moves_training(self):
        base = self.train("base")
        self.assertBitwise(base, self.train("p0", extra=["--perturb", "0"]), "--perturb 0")
        moved = self.train("p8", extra=["--perturb", "0.00390625"])
        self.assertEqual(moved["perturb"], 0.00390625)
        self.assertNotEqual(base["param_digest"], moved["param_digest"])
        dev = max(abs(x["loss"] - y["loss"]) for x, y in zip(base["step_records"], moved["step_records"]))
        self.assertGreater(dev, 0.0)
        self.assertLess(dev, 0.05)

    def test_manifest_declares_perturb_and_hides_mutants(self):
        m = json.loads(self.invoke(["describe", "--json"]).stdout)
        self.assertEqual(m["capabilities"], ["perturb"])
        names = {s["name"] for s in m["switches"]}
        self.assertFalse(names & {s.name for s in train.MUTANTS}, "test-only switches leaked")
        self.assertExit2(self.invoke(self.run_args(), clean_env(SG_NOOP_A="1")), "SG_NOOP_A")


class MutantsTest(trainer_test_util.TempDirCase):
    """The test-only switches of SPEEDGATE_ADAPTER_MUTANTS=1 do what the gate's mutation
    suite assumes: no-ops and SKIP_REDUNDANT are bitwise, the rounding switches stay close,
    and every recipe mutant changes training."""

    tmp_prefix = "sg_mutants_test_"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.runs = {}

    def run_with(self, switch=None):
        if switch in self.runs:
            return self.runs[switch]
        result = os.path.join(self.tmp, "%s.json" % switch)
        env = clean_env(SPEEDGATE_ADAPTER_MUTANTS="1", **({"SG_" + switch: "1"} if switch else {}))
        proc = subprocess.run([sys.executable, TRAIN, "run", "--workload", "cnn", "--size", "tiny",
                               "--steps", "4", "--seed", "0", "--micro-batch", "8", "--grad-accum",
                               "1", "--threads", "1", "--result", result], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(result, encoding="utf-8") as f:
            self.runs[switch] = json.load(f)
        return self.runs[switch]

    def test_manifest_lists_mutants_only_on_request(self):
        proc = subprocess.run([sys.executable, TRAIN, "describe", "--json"], text=True,
                              env=clean_env(SPEEDGATE_ADAPTER_MUTANTS="1"), stdout=subprocess.PIPE)
        names = [s["name"] for s in json.loads(proc.stdout)["switches"]]
        self.assertEqual(names[-len(train.MUTANTS):], [s.name for s in train.MUTANTS])

    def test_classes(self):
        base = self.run_with()
        for spec in train.MUTANTS:
            r = self.run_with(spec.name)
            same = [(x["loss_bits"], x["grad_norm_bits"]) for x in r["step_records"]] == \
                [(x["loss_bits"], x["grad_norm_bits"]) for x in base["step_records"]] and \
                r["param_digest"] == base["param_digest"]
            dev = max(abs(x["loss"] - y["loss"]) for x, y in zip(base["step_records"], r["step_records"]))
            with self.subTest(switch=spec.name):
                if spec.identity == "bitwise":
                    self.assertTrue(same)
                elif spec.name.startswith("ROUND_"):
                    self.assertFalse(same)
                    self.assertLess(dev, 5e-3)
                else:
                    self.assertFalse(same)


if __name__ == "__main__":
    unittest.main()
