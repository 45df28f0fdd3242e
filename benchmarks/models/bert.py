"""BERT_pytorch: a BERT language model shaped like codertimo's BERT-pytorch, which
TorchBench benchmarks under that name.

This is our own code, written with standard torch ops only (nn.Linear, nn.LayerNorm,
F.scaled_dot_product_attention) so that it traces cleanly under torch._dynamo and
torch_xla. Offers ``BERTLM`` (the model) and ``bert_model(name)`` (its registry entry).
"""
import math
from dataclasses import replace
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.models.spec import ModelSpec, TensorSpec

SEGMENTS = 3  # segment labels: 0 = padding, 1 = first sentence, 2 = second sentence


def sinusoids(length: int, dim: int) -> torch.Tensor:
    """The fixed sin/cos position table of "Attention Is All You Need", (length, dim)."""
    position = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    frequency = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table


class Embedding(nn.Module):
    """Token + sinusoidal position + segment embeddings, then dropout."""

    def __init__(self, vocab_size: int, hidden: int, seq_len: int, dropout: float):
        super().__init__()
        self.token = nn.Embedding(vocab_size, hidden, padding_idx=0)
        self.segment = nn.Embedding(SEGMENTS, hidden, padding_idx=0)
        # Not persistent: it is a function of the shape, not a weight to save.
        self.register_buffer("position", sinusoids(seq_len, hidden), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, tokens: torch.Tensor, segments: torch.Tensor) -> torch.Tensor:
        position = self.position[: tokens.size(1)]
        return self.dropout(self.token(tokens) + position + self.segment(segments))


class TransformerBlock(nn.Module):
    """Multi-head self-attention then a feed-forward network; each sub-layer is
    pre-norm with a residual connection, as in BERT-pytorch."""

    def __init__(self, hidden: int, heads: int, dropout: float):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not a multiple of {heads} heads")
        self.heads = heads
        self.attention_dropout = dropout
        self.attention_norm = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)  # the three projections as one matmul
        self.attention_out = nn.Linear(hidden, hidden)
        self.feed_forward_norm = nn.LayerNorm(hidden)
        self.feed_forward = nn.Sequential(
            nn.Linear(hidden, 4 * hidden),
            nn.GELU(approximate="tanh"),  # BERT-pytorch's GELU is the tanh approximation
            nn.Dropout(dropout),
            nn.Linear(4 * hidden, hidden),
        )
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.dropout(self.attend(self.attention_norm(x), mask))
        return x + self.dropout(self.feed_forward(self.feed_forward_norm(x)))

    def attend(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = x.shape
        # (batch, length, 3 * hidden) -> q, k, v of (batch, heads, length, head size)
        qkv = self.qkv(x).view(batch, length, 3, self.heads, hidden // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        dropout = self.attention_dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
        return self.attention_out(y.transpose(1, 2).reshape(batch, length, hidden))


class BERTLM(nn.Module):
    """BERT with its two pre-training heads.

    ``forward(tokens, segments)``, both int64 of shape (batch, seq_len), returns
    ``(next_sentence, masked_lm)``: log-probabilities of shape (batch, 2) and
    (batch, seq_len, vocab_size). Token id 0 is padding and is not attended to.
    """

    def __init__(
        self,
        vocab_size: int = 20000,
        hidden: int = 768,
        n_layers: int = 12,
        heads: int = 12,
        dropout: float = 0.1,
        seq_len: int = 128,
    ):
        super().__init__()
        self.embedding = Embedding(vocab_size, hidden, seq_len, dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(hidden, heads, dropout) for _ in range(n_layers)
        )
        self.next_sentence = nn.Linear(hidden, 2)
        self.masked_lm = nn.Linear(hidden, vocab_size)

    def forward(self, tokens: torch.Tensor, segments: torch.Tensor):
        # Keys that are padding are masked out: (batch, 1, 1, seq_len) broadcasts
        # over heads and queries.
        mask = (tokens > 0)[:, None, None, :]
        x = self.embedding(tokens, segments)
        for block in self.blocks:
            x = block(x, mask)
        next_sentence = F.log_softmax(self.next_sentence(x[:, 0]), dim=-1)  # from the first token
        masked_lm = F.log_softmax(self.masked_lm(x), dim=-1)
        return next_sentence, masked_lm


def bert_model(name: str, vocab_size: int = 20000, seq_len: int = 128, **config) -> ModelSpec:
    """A BERTLM entry; ``config`` passes the other BERTLM arguments (hidden, n_layers, ...)."""

    def spec(vocab: int, length: int, **arguments) -> ModelSpec:
        return ModelSpec(
            name=name,
            family="bert",
            build=partial(BERTLM, vocab_size=vocab, seq_len=length, **arguments),
            inputs=(
                TensorSpec((length,), torch.int64, low=0, high=vocab),  # token ids
                TensorSpec((length,), torch.int64, low=0, high=SEGMENTS),  # segment labels
            ),
        )

    return replace(spec(vocab_size, seq_len, **config),
                   tiny=spec(100, 16, hidden=32, n_layers=1, heads=2))
