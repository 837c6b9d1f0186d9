#!/usr/bin/env python3
"""A Hugging Face Trainer script made tunable with speedgate_trainer.hf: a small
Llama-shaped causal LM built from a config (no weights downloaded) fine-tuned on the
license texts Debian ships (/usr/share/common-licenses, or $SPEEDGATE_LM_CORPUS_DIR),
byte-level, windows of varying length. Run it with the venv of scripts/hf-venv.sh:

    .venv-hf/bin/python examples/hf_trainer/train.py describe --json
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import speedgate_trainer as sg  # noqa: E402
import speedgate_trainer.hf as sghf  # noqa: E402

SIZES = {"tiny": {"hidden": 64, "layers": 2, "heads": 2, "max_len": 64, "default_micro_batch": 4},
         "small": {"hidden": 256, "layers": 4, "heads": 4, "max_len": 256, "default_micro_batch": 8}}


def config(cfg):
    import transformers
    return transformers.LlamaConfig(vocab_size=256, hidden_size=cfg["hidden"],
                                    intermediate_size=2 * cfg["hidden"],
                                    num_hidden_layers=cfg["layers"],
                                    num_attention_heads=cfg["heads"],
                                    max_position_embeddings=cfg["max_len"], use_cache=False,
                                    pad_token_id=0, bos_token_id=1, eos_token_id=2)


class Windows:
    """Sample i: bytes of the corpus at a fixed offset, 1/4 to all of max_len long."""

    def __init__(self, data, max_len, count):
        self.data, self.max_len, self.count = data, max_len, count

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        if not 0 <= i < self.count:
            raise IndexError(i)   # ends iteration (HF's LengthGroupedSampler iterates)
        n = self.max_len // 4 + (i * 37) % (self.max_len - self.max_len // 4 + 1)
        start = (i * 7919) % (len(self.data) - n)
        return {"input_ids": list(self.data[start:start + n])}


def collate(rows):
    import torch
    n = max(len(r["input_ids"]) for r in rows)
    ids = torch.zeros(len(rows), n, dtype=torch.long)
    mask = torch.zeros(len(rows), n, dtype=torch.long)
    for k, r in enumerate(rows):
        ids[k, :len(r["input_ids"])] = torch.tensor(r["input_ids"])
        mask[k, :len(r["input_ids"])] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": ids.masked_fill(mask == 0, -100)}


def corpus():
    root = os.environ.get("SPEEDGATE_LM_CORPUS_DIR", "/usr/share/common-licenses")
    names = sorted(n for n in os.listdir(root) if not os.path.islink(os.path.join(root, n)))
    data = b"".join(open(os.path.join(root, n), "rb").read() for n in names)
    return data[:len(data) * 9 // 10], data[len(data) * 9 // 10:]


# --- everything above is an ordinary HF script; these lines make it tunable -------------
def build(ctx, args):
    import transformers
    cfg = SIZES[ctx.size]
    model = transformers.LlamaForCausalLM._from_config(config(cfg), **sghf.model_kwargs(ctx))
    train, held_out = corpus()
    return transformers.Trainer(model=model, args=args, data_collator=collate,
                                train_dataset=Windows(train, cfg["max_len"], 4096),
                                eval_dataset=Windows(held_out, cfg["max_len"], 256))


def describe(name, cfg):
    import transformers
    model = transformers.LlamaForCausalLM(config(cfg))
    n = sum(p.numel() for p in model.parameters())
    return sg.size_info(model, 6 * n * cfg["max_len"], cfg["max_len"], cfg["default_micro_batch"])


if __name__ == "__main__":
    sghf.run_main("hf-trainer-example", "0.1.0", [sg.Workload("lm", SIZES, describe)], build,
                  base_args={"learning_rate": 1e-3, "weight_decay": 0.01,
                             "lr_scheduler_type": "constant"},
                  prog="train.py")
