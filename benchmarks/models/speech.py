"""Speech models written here from their published designs:

* ``tts_angular``: the speaker encoder of Mozilla TTS trained with the angular
  prototypical loss (after Wan et al., 2018, "Generalized end-to-end loss"):
  three LSTMs of 768 units, each projected to 256, over 50 frames of 40 mel
  features; the last frame's projection, L2-normalised, is the embedding.
* ``speech_transformer``: Speech-Transformer (Dong et al., 2018) as in
  kaituoxu's implementation: low-frame-rate filterbank features (80 x 4
  stacked = 320) into a Transformer encoder, a Transformer decoder over
  characters with its output layer tied to its embedding. The decoder strips
  each target's padding and adds <sos>/<eos> sequence by sequence, as the
  original does: a data-dependent step that breaks dynamo's graph.
"""
from __future__ import annotations

import math
from dataclasses import replace
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pad_sequence

from benchmarks.models.spec import ModelSpec, TensorSpec

# --------------------------------------------------------------------------
# tts_angular


class ProjectedLSTM(nn.Module):
    def __init__(self, n_in: int, hidden: int, projection: int):
        super().__init__()
        self.lstm = nn.LSTM(n_in, hidden, batch_first=True)
        self.linear = nn.Linear(hidden, projection, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return self.linear(out)


class SpeakerEncoder(nn.Module):
    """(batch, frames, mels) -> speaker embedding (batch, projection), unit norm."""

    def __init__(self, mels: int = 40, hidden: int = 768, projection: int = 256, layers: int = 3):
        super().__init__()
        sizes = [mels] + [projection] * (layers - 1)
        self.layers = nn.Sequential(*(ProjectedLSTM(n, hidden, projection) for n in sizes))
        for name, p in self.layers.named_parameters():
            if "bias" in name:
                nn.init.zeros_(p)
            else:
                nn.init.xavier_normal_(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.layers(x)[:, -1], p=2, dim=1)


def tts_angular_model() -> ModelSpec:
    def spec(frames: int, mels: int, **config) -> ModelSpec:
        return ModelSpec("tts_angular", "speech", partial(SpeakerEncoder, mels=mels, **config),
                         inputs=(TensorSpec((frames, mels), low=0.0, high=1.0),))

    return replace(spec(50, 40), tiny=spec(5, 8, hidden=16, projection=8, layers=2))


# --------------------------------------------------------------------------
# speech_transformer

IGNORE_ID = -1  # the padding of targets


def sinusoids(length: int, width: int) -> torch.Tensor:
    position = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    frequency = torch.exp(torch.arange(0, width, 2, dtype=torch.float32)
                          * (-math.log(10000.0) / width))
    table = torch.zeros(length, width)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table


class Attention(nn.Module):
    """Multi-head attention; ``mask`` is True where a query may attend a key."""

    def __init__(self, width: int, heads: int, dropout: float):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.q, self.k, self.v = (nn.Linear(width, width) for _ in range(3))
        self.out = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, -1, self.heads, width // self.heads).transpose(1, 2)

        y = F.scaled_dot_product_attention(
            heads(self.q(x)), heads(self.k(memory)), heads(self.v(memory)), attn_mask=mask,
            dropout_p=self.dropout if self.training else 0.0)
        y = self.out(y.transpose(1, 2).reshape(batch, length, width))
        # Post-norm residual, as in the original Transformer and this model.
        return self.norm(x + F.dropout(y, self.dropout, self.training))


class FeedForward(nn.Module):
    def __init__(self, width: int, inner: int, dropout: float):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(width, inner), nn.ReLU(), nn.Linear(inner, width),
                                 nn.Dropout(dropout))
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + self.net(x))


class EncoderLayer(nn.Module):
    def __init__(self, width, heads, inner, dropout):
        super().__init__()
        self.attention = Attention(width, heads, dropout)
        self.feed_forward = FeedForward(width, inner, dropout)

    def forward(self, x, mask):
        return self.feed_forward(self.attention(x, x, mask))


class DecoderLayer(nn.Module):
    def __init__(self, width, heads, inner, dropout):
        super().__init__()
        self.self_attention = Attention(width, heads, dropout)
        self.cross_attention = Attention(width, heads, dropout)
        self.feed_forward = FeedForward(width, inner, dropout)

    def forward(self, y, memory, self_mask, memory_mask):
        y = self.self_attention(y, y, self_mask)
        return self.feed_forward(self.cross_attention(y, memory, memory_mask))


class SpeechTransformer(nn.Module):
    """``forward(features, lengths, targets)``: padded features (batch, frames,
    features_in), valid frames per utterance (batch,), padded character ids
    (batch, chars; padding IGNORE_ID) -> (logits (batch, chars + 1, vocab),
    gold (batch, chars + 1))."""

    def __init__(self, vocab: int = 4233, features_in: int = 320, width: int = 512,
                 heads: int = 8, inner: int = 2048, encoder_layers: int = 6,
                 decoder_layers: int = 6, dropout: float = 0.1, max_length: int = 5000):
        super().__init__()
        self.sos, self.eos = vocab - 2, vocab - 1  # the last two ids of the dictionary
        self.input = nn.Sequential(nn.Linear(features_in, width), nn.LayerNorm(width))
        self.register_buffer("positions", sinusoids(max_length, width), persistent=False)
        self.dropout = nn.Dropout(dropout)
        self.encoder = nn.ModuleList(EncoderLayer(width, heads, inner, dropout)
                                     for _ in range(encoder_layers))
        self.embedding = nn.Embedding(vocab, width)
        self.decoder = nn.ModuleList(DecoderLayer(width, heads, inner, dropout)
                                     for _ in range(decoder_layers))
        self.output = nn.Linear(width, vocab, bias=False)
        self.output.weight = self.embedding.weight  # tied, scaled as the original does
        self.logit_scale = width ** -0.5
        nn.init.xavier_normal_(self.embedding.weight)

    def encode(self, features: torch.Tensor, lengths: torch.Tensor):
        frames = torch.arange(features.size(1), device=features.device)
        valid = frames[None, :] < lengths[:, None]  # (batch, frames)
        mask = valid[:, None, None, :]  # keys that are real frames
        x = self.dropout(self.input(features) + self.positions[: features.size(1)])
        for layer in self.encoder:
            x = layer(x, mask)
        return x, mask

    def prepare_targets(self, targets: torch.Tensor):
        # Sequence by sequence, as the original: drop the padding, then add
        # <sos> in front of the decoder's input and <eos> after its goal.
        ys = [y[y != IGNORE_ID] for y in targets]
        sos, eos = ys[0].new_tensor([self.sos]), ys[0].new_tensor([self.eos])
        ys_in = pad_sequence([torch.cat([sos, y]) for y in ys], batch_first=True,
                             padding_value=self.eos)
        gold = pad_sequence([torch.cat([y, eos]) for y in ys], batch_first=True,
                            padding_value=IGNORE_ID)
        return ys_in, gold

    def forward(self, features: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor):
        memory, memory_mask = self.encode(features, lengths)
        ys_in, gold = self.prepare_targets(targets)
        length = ys_in.size(1)
        causal = torch.ones(length, length, dtype=torch.bool, device=ys_in.device).tril()
        self_mask = causal[None, None] & (gold != IGNORE_ID)[:, None, None, :]
        self_mask = self_mask | torch.eye(length, dtype=torch.bool, device=ys_in.device)
        y = self.dropout(self.embedding(ys_in) + self.positions[:length])
        for layer in self.decoder:
            y = layer(y, memory, self_mask, memory_mask)
        return self.output(y) * self.logit_scale, gold


def speech_transformer_model() -> ModelSpec:
    def spec(frames: int, chars: int, vocab: int = 4233, **config) -> ModelSpec:
        return ModelSpec(
            "speech_transformer", "speech", partial(SpeechTransformer, vocab=vocab, **config),
            inputs=(TensorSpec((frames, config.get("features_in", 320))),
                    # Every utterance at least half as long as the longest.
                    TensorSpec((), torch.int64, low=frames // 2, high=frames + 1),
                    TensorSpec((chars,), torch.int64, low=0, high=vocab - 2)))

    # An utterance of AISHELL (TorchBench's data) is a few hundred frames at
    # the low frame rate and a few dozen characters.
    return replace(spec(200, 24), cpu=spec(100, 16, encoder_layers=2, decoder_layers=2),
                   tiny=spec(12, 5, vocab=50, features_in=16, width=32, heads=2, inner=64,
                             encoder_layers=1, decoder_layers=1, max_length=64))
