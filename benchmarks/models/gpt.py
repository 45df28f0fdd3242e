"""nanogpt: a GPT-2 style decoder as in Karpathy's nanoGPT (and GPT-2, Radford
et al., 2019), written here: pre-norm blocks of causal self-attention and a
tanh-GELU MLP, learned positions, the output layer tied to the token
embedding, and (without targets) logits for the last position only, as
nanoGPT computes them at inference.
"""
from __future__ import annotations

import math
from dataclasses import replace
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.models.spec import ModelSpec, TensorSpec


class CausalSelfAttention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = (t.view(batch, length, self.heads, width // self.heads).transpose(1, 2)
                   for t in self.qkv(x).split(width, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(batch, length, width))


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """``forward(idx, targets=None)`` -> ``(logits, loss)``: logits of the last
    position (batch, 1, vocab) and no loss, or with targets every position's
    logits and the cross-entropy."""

    def __init__(self, vocab: int = 50304, block_size: int = 1024, layers: int = 12,
                 heads: int = 12, width: int = 768):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(block_size, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight") or name.endswith("mlp.2.weight"):
                # Residual projections scaled down with depth, as GPT-2 does.
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * layers))

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        positions = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        x = self.ln_f(x)
        if targets is None:
            return self.lm_head(x[:, [-1], :]), None
        logits = self.lm_head(x)
        return logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def nanogpt_model() -> ModelSpec:
    def spec(prompt: int, **config) -> ModelSpec:
        vocab = config.get("vocab", 50304)
        return ModelSpec("nanogpt", "gpt", partial(GPT, **config),
                         inputs=(TensorSpec((prompt,), torch.int64, low=1, high=vocab),))

    # TorchBench: the default GPTConfig and a 64-token prompt.
    return replace(spec(64), cpu=spec(64, layers=4),
                   tiny=spec(8, vocab=64, block_size=16, layers=1, heads=2, width=32))
