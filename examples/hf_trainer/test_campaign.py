"""A real `speedgate tune` campaign on the CPU over the Hugging Face Trainer example
(python/tests/campaign_check.py says what it checks). Needs the built controller and
.venv-hf/bin first on PATH (train.py starts with /usr/bin/env python3)."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "tests"))
import campaign_check  # noqa: E402


class HfCampaignTest(unittest.TestCase):
    def test_tune_the_hf_trainer_example_and_emit_gated_presets(self):
        campaign_check.tune_and_check(self, os.path.join(HERE, "train.py"), "lm", "tiny",
                                      trials=20, steps=4)


if __name__ == "__main__":
    unittest.main()
