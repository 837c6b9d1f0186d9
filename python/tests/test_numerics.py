"""speedgate_trainer.numerics and files: bits, digests, --perturb, atomic writes."""

import os
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402

import speedgate_trainer as sg  # noqa: E402


def model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(16, 2))


class NumericsTest(unittest.TestCase):
    def test_float32_bits(self):
        self.assertEqual(sg.f32_bits(1.0), "3f800000")
        self.assertEqual(sg.f32_bits(-0.0), "80000000")
        self.assertEqual(sg.f32_bits(float("inf")), "7f800000")
        self.assertEqual(sg.f32_bits(torch.tensor(0.1)), "3dcccccd")
        self.assertEqual(sg.f32(0.1), float(torch.tensor(0.1)))
        self.assertIsNone(sg.decimal(float("nan")))
        self.assertEqual(sg.decimal(2.5), 2.5)

    def test_param_digest_sees_values_not_layout(self):
        a, b = model(), model()
        self.assertEqual(sg.param_digest(a), sg.param_digest(b))
        b.to(memory_format=torch.channels_last)
        self.assertFalse(b[0].weight.is_contiguous())
        self.assertEqual(sg.param_digest(a), sg.param_digest(b))
        with torch.no_grad():
            b[2].bias[0] = torch.nextafter(b[2].bias[0], torch.tensor(1.0))
        self.assertNotEqual(sg.param_digest(a), sg.param_digest(b))
        self.assertRegex(sg.param_digest(a), "^[0-9a-f]{64}$")

    def test_frozen_parameters_are_not_digested(self):
        a, b = model(), model()
        b[0].weight.requires_grad_(False)
        with torch.no_grad():
            b[0].weight.zero_()
        a[0].weight.requires_grad_(False)
        self.assertEqual(sg.param_digest(a), sg.param_digest(b))

    def test_bfloat16_digests(self):
        m = model().to(torch.bfloat16)
        self.assertEqual(sg.param_digest(m), sg.param_digest(model().to(torch.bfloat16)))

    def test_optimizer_digest_covers_state_and_step(self):
        def trained(steps, lr=1e-2):
            m = model()
            opt = torch.optim.AdamW(m.parameters(), lr=lr)
            for _ in range(steps):
                m(torch.ones(1, 3, 4, 4)).sum().backward()
                opt.step()
            return sg.optimizer_digest(m, opt)
        self.assertEqual(trained(2), trained(2))
        self.assertNotEqual(trained(1), trained(2))
        self.assertNotEqual(trained(2), trained(2, lr=2e-2))

    def test_perturb(self):
        eps = 2.0 ** -8
        base, p = model(), model()
        sg.perturb_parameters(p, 0.0, seed=3)
        self.assertEqual(sg.param_digest(base), sg.param_digest(p))
        sg.perturb_parameters(p, eps, seed=3)
        ratio = torch.cat([(y / x)[x != 0] for x, y in zip(base.parameters(), p.parameters())])
        self.assertTrue(torch.all((ratio - 1).abs().sub(eps).abs() < 1e-6))
        self.assertGreater(int((ratio > 1).sum()), len(ratio) // 4)   # signs both ways
        self.assertGreater(int((ratio < 1).sum()), len(ratio) // 4)
        again = model()
        sg.perturb_parameters(again, eps, seed=3)
        self.assertEqual(sg.param_digest(again), sg.param_digest(p))
        other = model()
        sg.perturb_parameters(other, eps, seed=4)
        self.assertNotEqual(sg.param_digest(other), sg.param_digest(p))
        self.assertEqual(sg.perturb_seed(0), 0x5EED)
        self.assertEqual(sg.perturb_seed(2 ** 62), (2 ** 62 * 1000003 + 0x5EED) & (2 ** 63 - 1))

    def test_is_oom(self):
        self.assertTrue(sg.is_oom(MemoryError()))
        self.assertTrue(sg.is_oom(RuntimeError("CUDA out of memory. Tried to allocate")))
        self.assertTrue(sg.is_oom(RuntimeError("DefaultCPUAllocator: can't allocate memory")))
        self.assertFalse(sg.is_oom(RuntimeError("shape mismatch")))


class FilesTest(unittest.TestCase):
    def test_atomic_write_leaves_no_temp_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            sg.write_json_atomic(path, {"a": 1})
            sg.heartbeat(os.path.join(d, "hb.json"), 3)
            self.assertEqual(sorted(os.listdir(d)), ["hb.json", "r.json"])
            with mock.patch("os.fsync", side_effect=OSError(5, "I/O error")), \
                    self.assertRaises(OSError):
                sg.write_json_atomic(path, {"a": 2})
            self.assertEqual(sorted(os.listdir(d)), ["hb.json", "r.json"])
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.read(), '{\n "a": 1\n}\n')
            with self.assertRaises(ValueError):  # JSON has no NaN: never written
                sg.write_json_atomic(path, {"a": float("nan")})
            self.assertEqual(sorted(os.listdir(d)), ["hb.json", "r.json"])


if __name__ == "__main__":
    unittest.main()
