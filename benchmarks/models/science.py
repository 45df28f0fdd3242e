"""Scientific kernels written here:

* ``lennard_jones``: the small tanh MLP that TorchBench fits to Lennard-Jones
  energies (after muhrin/milad): distances in, energies out, 1000 at a time.
* ``pyhpc_equation_of_state``: an equation of state of seawater over a 3-D
  ocean grid, like the pyhpc benchmark (Häfner's pyhpc-benchmarks): one long
  elementwise polynomial with a pressure profile broadcast over the grid.
  TorchBench's kernel is TEOS-10's 48-term enthalpy derivative; ours is the
  UNESCO EOS-80 in-situ density (Fofonoff & Millard, UNESCO technical papers
  in marine science 44, 1983): the same kind of work, in a formula whose
  published check values the tests verify.
"""
from __future__ import annotations

from dataclasses import replace

import torch
from torch import nn

from benchmarks.models.spec import ModelSpec, TensorSpec


def lennard_jones_model() -> ModelSpec:
    def build() -> nn.Module:
        sizes = [1, 16, 16, 16, 16, 1]
        layers: list[nn.Module] = []
        for n_in, n_out in zip(sizes, sizes[1:]):
            layers += [nn.Linear(n_in, n_out), nn.Tanh()]
        return nn.Sequential(*layers[:-1])  # no activation after the last layer

    # TorchBench's distances run from 0.5 to 1.0 (twice the LJ sigma).
    return ModelSpec("lennard_jones", "science", build,
                     inputs=(TensorSpec((1,), low=0.5, high=1.0),))


def _poly(x: torch.Tensor, coefficients: tuple[float, ...]) -> torch.Tensor:
    """c0 + c1 x + c2 x^2 + ... by Horner's rule."""
    result = torch.full_like(x, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        result = result * x + c
    return result


class SeawaterDensity(nn.Module):
    """``forward(s, t, p)``: salinity (PSS-78), temperature (deg C) and pressure
    (dbar), broadcastable -> in-situ density (kg/m^3), UNESCO EOS-80."""

    def forward(self, s: torch.Tensor, t: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        p = p / 10.0  # the formula takes bars
        s15 = s * torch.sqrt(s)
        # Density at the surface: pure water (SMOW), then the salt terms.
        rho_w = _poly(t, (999.842594, 6.793952e-2, -9.095290e-3, 1.001685e-4, -1.120083e-6,
                          6.536332e-9))
        rho_0 = (rho_w + s * _poly(t, (8.24493e-1, -4.0899e-3, 7.6438e-5, -8.2467e-7, 5.3875e-9))
                 + s15 * _poly(t, (-5.72466e-3, 1.0227e-4, -1.6546e-6)) + 4.8314e-4 * s * s)
        # Secant bulk modulus K(s, t, p) = K0 + A p + B p^2.
        k_0 = (_poly(t, (19652.21, 148.4206, -2.327105, 1.360477e-2, -5.155288e-5))
               + s * _poly(t, (54.6746, -0.603459, 1.09987e-2, -6.1670e-5))
               + s15 * _poly(t, (7.944e-2, 1.6483e-2, -5.3009e-4)))
        a = (_poly(t, (3.239908, 1.43713e-3, 1.16092e-4, -5.77905e-7))
             + s * _poly(t, (2.2838e-3, -1.0981e-5, -1.6078e-6)) + 1.91075e-4 * s15)
        b = (_poly(t, (8.50935e-5, -6.12293e-6, 5.2787e-8))
             + s * _poly(t, (-9.9348e-7, 2.0816e-8, 9.1697e-10)))
        k = k_0 + a * p + b * p * p
        return rho_0 / (1.0 - p / k)


def equation_of_state_model() -> ModelSpec:
    def spec(columns: int, levels: int) -> ModelSpec:
        # A batch is a slab of the grid (batch, columns, levels); the pressure
        # profile (1, 1, levels) is shared. Ranges of pyhpc-benchmarks' inputs.
        return ModelSpec("pyhpc_equation_of_state", "science", SeawaterDensity, inputs=(
            TensorSpec((columns, levels), torch.float64, low=1e-2, high=10.0),
            TensorSpec((columns, levels), torch.float64, low=-12.0, high=20.0),
            TensorSpec((1, 1, levels), torch.float64, low=0.0, high=1000.0, batched=False)))

    # TorchBench's 2**20 points are a 204 x 204 x 26 grid: a batch of 204
    # slabs of 204 x 26 at its default size.
    return replace(spec(204, 26), tiny=spec(4, 3))
