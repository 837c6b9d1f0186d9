"""speedgate_trainer.switches: the switch table's checks and the protocol's exit-2 contract."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from speedgate_trainer import Switch, UsageError, resolve  # noqa: E402

TABLE = [Switch("CACHE"),
         Switch("LIMIT", type="int", min=0, max=100, values=["0", "10"], default="0",
                requires=["CACHE=1"], effect="memory"),
         Switch("KIND", type="enum", values=["x", "y"], default="x", identity="tolerance",
                workloads=["lm"]),
         Switch("CUDA_ONLY", available=lambda: "needs CUDA")]


class SwitchTest(unittest.TestCase):
    def preset(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".env", delete=False)
        f.write(text)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def assertUsage(self, *mentions, env=None, preset=None, workload="lm"):
        with self.assertRaises(UsageError) as caught:
            resolve(TABLE, env or {}, preset, workload)
        for m in mentions:
            self.assertIn(m, str(caught.exception))

    def test_defaults_without_input(self):
        self.assertEqual(resolve(TABLE, {"PATH": "/bin"}), {"CACHE": "0", "LIMIT": "0", "KIND": "x",
                                                           "CUDA_ONLY": "0"})

    def test_preset_then_environment_wins(self):
        p = self.preset("# comment\n\nSG_CACHE=1\nSG_LIMIT=10\n")
        values = resolve(TABLE, {"SG_LIMIT": "50"}, p)
        self.assertEqual((values["CACHE"], values["LIMIT"]), ("1", "50"))

    def test_bad_environment_names_the_switch(self):
        self.assertUsage("SG_NOPE", "unknown switch", env={"SG_NOPE": "1"})
        self.assertUsage("SG_CACHE=2", "0 or 1", env={"SG_CACHE": "2"})
        self.assertUsage("SG_LIMIT=101", "0..100", env={"SG_CACHE": "1", "SG_LIMIT": "101"})
        self.assertUsage("SG_LIMIT=ten", env={"SG_CACHE": "1", "SG_LIMIT": "ten"})
        self.assertUsage("SG_KIND=z", "one of x, y", env={"SG_KIND": "z"})
        self.assertUsage("SG_LIMIT=10", "requires SG_CACHE=1", env={"SG_LIMIT": "10"})
        self.assertUsage("SG_CUDA_ONLY", "unavailable: needs CUDA", env={"SG_CUDA_ONLY": "1"})
        self.assertUsage("SG_KIND=y", "workload cnn", env={"SG_KIND": "y"}, workload="cnn")

    def test_defaults_of_unavailable_or_foreign_switches_are_accepted(self):
        resolve(TABLE, {"SG_CUDA_ONLY": "0", "SG_KIND": "x"}, None, "cnn")

    def test_bad_preset_names_file_and_line(self):
        cases = [("SG_CACHE=1\nnot a line\n", ":2", "expected SG_NAME=value"),
                 ("sg_cache=1\n", ":1", "bad variable name"),
                 ("SG_CACHE=1\nSG_CACHE=0\n", ":2", "already set at"),
                 ("\n\nSG_WHAT=1\n", ":3", "SG_WHAT"),
                 ("SG_LIMIT=10\n", ":1", "requires")]
        for text, line, why in cases:
            with self.subTest(text=text):
                p = self.preset(text)
                self.assertUsage(p + line, why, preset=p)
        self.assertUsage("missing.env", "cannot read", preset="/nonexistent/missing.env")

    def test_table_errors_are_programming_errors(self):
        for kwargs in ({"name": "lower"}, {"name": "A", "type": "float"},
                       {"name": "A", "identity": "close"}, {"name": "A", "type": "int"},
                       {"name": "A", "type": "enum", "values": ["a b"]},
                       {"name": "A", "type": "int", "min": 0, "max": 4, "values": ["9"]}):
            with self.subTest(kwargs=kwargs), self.assertRaises(ValueError):
                Switch(**kwargs)

    def test_manifest_entry(self):
        e = TABLE[1].manifest_entry()
        self.assertEqual((e["env"], e["min"], e["max"], e["values"], e["default"], e["requires"]),
                         ("SG_LIMIT", 0, 100, ["0", "10"], "0", ["CACHE=1"]))
        self.assertNotIn("workloads", e)
        self.assertEqual(TABLE[2].manifest_entry()["workloads"], ["lm"])
        cuda = TABLE[3].manifest_entry()
        self.assertEqual((cuda["available"], cuda["unavailable_reason"]), (False, "needs CUDA"))

    def test_availability_checks_answer_with_a_reason_or_nothing(self):
        import torch
        from speedgate_trainer import availability
        for check in (availability.sdpa, availability.compile, availability.fused_adamw,
                      availability.tf32):
            with self.subTest(check=check.__name__):
                self.assertIsInstance(check(), str)
        self.assertEqual(availability.sdpa() == "",
                         hasattr(torch.nn.functional, "scaled_dot_product_attention"))
        self.assertTrue(availability.torch_at_least(1, 0))
        self.assertFalse(availability.torch_at_least(99, 0))


if __name__ == "__main__":
    unittest.main()
