"""A nanoGPT-sized byte-level GPT: token and position embeddings, pre-LayerNorm blocks of
causal self-attention and a GELU MLP, and a head tied to the token embedding."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 256  # bytes: no tokenizer to ship

SIZES = {  # base: nanoGPT's shakespeare-char model
    "tiny": {"layers": 2, "heads": 2, "embd": 32, "block": 32, "default_micro_batch": 4},
    "small": {"layers": 2, "heads": 2, "embd": 64, "block": 64, "default_micro_batch": 8},
    "base": {"layers": 6, "heads": 6, "embd": 384, "block": 256, "default_micro_batch": 64},
}


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg, sdpa):
        super().__init__()
        self.heads, self.sdpa = cfg["heads"], sdpa
        self.qkv = nn.Linear(cfg["embd"], 3 * cfg["embd"])
        self.proj = nn.Linear(cfg["embd"], cfg["embd"])
        mask = torch.tril(torch.ones(cfg["block"], cfg["block"], dtype=torch.bool))
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(~self.mask[:T, :T], float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self, cfg, sdpa):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg["embd"]), nn.LayerNorm(cfg["embd"])
        self.attn = CausalSelfAttention(cfg, sdpa)
        self.mlp = nn.Sequential(nn.Linear(cfg["embd"], 4 * cfg["embd"]), nn.GELU(),
                                 nn.Linear(4 * cfg["embd"], cfg["embd"]))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, cfg, sdpa=False):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, cfg["embd"])
        self.wpe = nn.Embedding(cfg["block"], cfg["embd"])
        self.blocks = nn.ModuleList(Block(cfg, sdpa) for _ in range(cfg["layers"]))
        self.ln_f = nn.LayerNorm(cfg["embd"])
        self.head = nn.Linear(cfg["embd"], VOCAB, bias=False)
        self.head.weight = self.wte.weight  # tied
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def flops_per_token(model, cfg):
    """nanoGPT's estimate: 6 N for the weights plus the attention's 12 L T C."""
    n = sum(p.numel() for p in model.parameters())
    return 6 * n + 12 * cfg["layers"] * cfg["block"] * cfg["embd"]
