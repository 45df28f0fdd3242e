"""Recommendation models, written here from their published designs.

* ``dlrm``: DLRM (Naumov et al., 2019, arXiv:1906.00091) as TorchBench
  configures it: a bottom MLP over 512 dense features, eight embedding tables
  of 64-wide rows read as bags of 100 lookups (``nn.EmbeddingBag``, summed),
  pairwise dot-product interactions, and a top MLP to a click probability.
* ``nvidia_deeprecommender``: NVIDIA's DeepRecommender (Kuchaiev & Ginsburg,
  2017, arXiv:1708.01715): a deep autoencoder over a user's ratings of every
  item, layers 512-512-1024 with SELU and heavy dropout on the code.
"""
from __future__ import annotations

from dataclasses import replace
from functools import partial

import torch
from torch import nn

from benchmarks.models.spec import ModelSpec, TensorSpec


def _mlp(sizes: list[int], last: nn.Module) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        layers += [nn.Linear(n_in, n_out), last if i == len(sizes) - 2 else nn.ReLU()]
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    """``forward(dense, sparse)``: dense features (batch, dense) and bag indices
    (batch, tables, lookups) -> click probability (batch, 1)."""

    def __init__(self, dense: int = 512, bottom: tuple = (512, 64), tables: int = 8,
                 rows: int = 1_000_000, top: tuple = (1024, 1024, 1024, 1)):
        super().__init__()
        dim = bottom[-1]  # the embedding width: interactions need equal widths
        self.bottom = _mlp([dense, *bottom], nn.ReLU())
        self.embeddings = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum")
                                        for _ in range(tables))
        for bag in self.embeddings:
            # DLRM's initialisation: uniform within +-sqrt(1 / rows).
            nn.init.uniform_(bag.weight, -(1 / rows) ** 0.5, (1 / rows) ** 0.5)
        features = tables + 1
        # Each pair of distinct feature vectors once: the strict lower triangle.
        rows_i, cols_i = torch.tril_indices(features, features, offset=-1)
        self.register_buffer("pair_rows", rows_i, persistent=False)
        self.register_buffer("pair_cols", cols_i, persistent=False)
        self.top = _mlp([dim + len(rows_i), *top], nn.Sigmoid())

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
        x = self.bottom(dense)
        bags = [bag(sparse[:, t]) for t, bag in enumerate(self.embeddings)]
        features = torch.stack([x, *bags], dim=1)  # (batch, tables + 1, dim)
        dots = torch.bmm(features, features.transpose(1, 2))
        interactions = dots[:, self.pair_rows, self.pair_cols]
        return self.top(torch.cat([x, interactions], dim=1))


def _dlrm_spec(dense, bottom, tables, rows, top, lookups) -> ModelSpec:
    return ModelSpec(
        "dlrm", "recsys",
        partial(DLRM, dense=dense, bottom=bottom, tables=tables, rows=rows, top=top),
        inputs=(TensorSpec((dense,)),
                TensorSpec((tables, lookups), torch.int64, low=0, high=rows)))


def dlrm_model() -> ModelSpec:
    return replace(
        _dlrm_spec(512, (512, 64), 8, 1_000_000, (1024, 1024, 1024, 1), 100),
        cpu=_dlrm_spec(512, (512, 64), 8, 100_000, (1024, 1024, 1024, 1), 100),
        tiny=_dlrm_spec(16, (16, 8), 3, 100, (32, 1), 4),
    )


class DeepRecommender(nn.Module):
    """``forward(ratings)``: (batch, items) -> reconstructed ratings (batch, items)."""

    def __init__(self, items: int = 197951, layers: tuple = (512, 512, 1024),
                 dropout: float = 0.8):
        super().__init__()
        sizes = [items, *layers]
        self.encoder = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))
        self.drop = nn.Dropout(dropout)
        backwards = sizes[::-1]
        self.decoder = nn.ModuleList(nn.Linear(a, b) for a, b in zip(backwards, backwards[1:]))
        for layer in [*self.encoder, *self.decoder]:
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, ratings: torch.Tensor) -> torch.Tensor:
        x = ratings
        for layer in self.encoder:
            x = torch.selu(layer(x))
        x = self.drop(x)  # on the code only, as the paper does
        for layer in self.decoder:
            x = torch.selu(layer(x))
        return x


def deeprecommender_model() -> ModelSpec:
    def spec(items, layers):
        return ModelSpec("nvidia_deeprecommender", "recsys",
                         partial(DeepRecommender, items=items, layers=layers),
                         inputs=(TensorSpec((items,)),))

    return replace(spec(197951, (512, 512, 1024)),
                   cpu=spec(20000, (512, 512, 1024)), tiny=spec(64, (16, 16, 32)))
