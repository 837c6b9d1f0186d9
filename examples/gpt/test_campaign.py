"""A real `speedgate tune` campaign on the CPU over the GPT example (python/tests/
campaign_check.py says what it checks). Needs the built controller."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "tests"))
import campaign_check  # noqa: E402


class GptCampaignTest(unittest.TestCase):
    def test_tune_the_gpt_example_and_emit_gated_presets(self):
        campaign_check.tune_and_check(self, os.path.join(HERE, "train.py"), "gpt", "tiny",
                                      trials=30, steps=4)


if __name__ == "__main__":
    unittest.main()
