"""The private ``torch_xla._XLAC`` calls the bridge makes, under names that say
what they do. torch_xla is imported on first use; the replay's hot path binds
``run_cached_graph`` once instead of calling through here.
"""
from __future__ import annotations

from contextlib import contextmanager

import torch


def _X():
    import torch_xla

    return torch_xla._XLAC


def wait_device() -> None:
    """Wait for every pending execution on the device."""
    _X()._xla_wait_device_ops([])


def compute(tensors) -> None:
    """Turn the pending IR of ``tensors`` (only theirs) into device data
    (without a ``mark_step``: a user's profiler scope stays open)."""
    if tensors:
        _X()._xla_sync_multi(list(tensors), devices=[], wait=True, sync_xla_data=True)


def pending(tensors) -> list[bool]:
    """Per tensor: does it hold lazy IR (updated in place, or computed but
    not yet run) rather than plain device data?"""
    return _X()._check_tensor_need_materialization(list(tensors))


def data_handles(tensors) -> list[int]:
    """The device buffer each tensor holds (tensors must be device data)."""
    return _X()._get_tensors_handle(list(tensors))


def data_view(tensor: torch.Tensor) -> torch.Tensor:
    """A new XLA tensor over ``tensor``'s device buffer, unrelated to it for
    autograd, views and in-place updates."""
    return _X()._get_tensors_xla_device_data_node([tensor])[1][0]


def private_copy(tensor: torch.Tensor) -> torch.Tensor:
    """An XLA tensor over a new device buffer holding ``tensor``'s value.
    (Moving a 0-dim host tensor with ``.to(device)`` may hand back a buffer
    torch_xla shares between all scalars of that value.)"""
    return _X()._xla_tensors_from_aten([tensor.cpu()], [str(tensor.device)], None)[0]


def graph_parameters(outputs) -> tuple[list[int], list[torch.Tensor]]:
    """The device data computing ``outputs`` reads, in HLO parameter order:
    (tensor ids, tensors over the same buffers)."""
    return _X()._get_tensors_xla_device_data_node(list(outputs))


def seed_parameter_id() -> int:
    """The tensor id under which the device RNG seed appears among graph parameters."""
    return _X()._get_seed_info_id()


def element_type(tensor: torch.Tensor) -> str:
    """The XLA element type ``tensor``'s value is kept in (``"f32"``,
    ``"pred"``, ...); not always the one its dtype maps to (a dropout mask is
    kept as f32)."""
    return _X()._get_xla_tensor_shape_type(tensor)


def graph_hash(outputs) -> bytes:
    """The hash of the graph computing ``outputs``: the key of its executable."""
    return _X()._get_graph_hash(list(outputs))


def compile_graph(outputs) -> None:
    """Compile the graph computing ``outputs`` into XLA's cache without running it."""
    _X()._xla_warm_up_cache(list(outputs), [])


def run_cached_graph():
    """``run(hash, inputs) -> results``: the cached executable on new inputs
    (asynchronous; raises on inputs with pending IR or an evicted hash)."""
    return _X()._run_cached_graph


def value_id(tensor: torch.Tensor) -> str:
    """Identity of an XLA tensor's current value (its IR node or its data).

    It changes whenever the tensor is updated in place, including by a copy
    from another tensor's data. Being an address, it can be reused once the
    value is freed: compare only ids of values kept alive.
    """
    return _X()._unique_id_for_ir_and_data(tensor)


def rng_seed(device: str) -> int:
    """The device RNG's running seed (moves with pending random ops)."""
    return _X()._xla_get_rng_seed(device)


def set_rng_seed(seed: int, device: str) -> None:
    """Restart the device RNG from ``seed``."""
    _X()._xla_set_rng_seed(seed, device)


def seed_tensor(device: str) -> torch.Tensor:
    """The device RNG's base seed as a 0-dim int64 device tensor."""
    return _X()._get_base_seed_as_tensor(device)


def donated(tensor: torch.Tensor) -> bool:
    """Is ``tensor``'s device buffer marked as a donor (XLA may reuse it for
    an output of the next executable compiled with it as a parameter)?"""
    return _X()._get_buffer_donation(tensor)


def set_donated(tensor: torch.Tensor, donate: bool) -> bool:
    """Mark (or unmark) ``tensor``'s device buffer as a donor; False if it
    holds no device data."""
    return _X()._set_buffer_donation(tensor, donate)


@contextmanager
def honouring_donors():
    """Graph hashes and compiles inside honour buffer donors: each parameter
    whose buffer is marked may be aliased to an output (the hash says so)."""
    saved = _X()._xla_get_enable_alias_with_buffer_donor_config()
    _X()._xla_set_enable_alias_with_buffer_donor_config(True)
    try:
        yield
    finally:
        _X()._xla_set_enable_alias_with_buffer_donor_config(saved)
