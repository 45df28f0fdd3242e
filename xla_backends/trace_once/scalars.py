"""Float arguments as inputs of the executable, not constants of it.

dynamo passes a graph a Python float when it does not specialise on it
(``specialize_float=False``: a value read with ``.item()`` in one graph and
used in the next, a float argument that changed between calls). torch_xla
keeps such a number as a 0-dim device buffer, an HLO parameter of the graph,
so one executable can serve every value. The graph is traced with stand-in
values, then with others: if the two traces have one hash, the parameters
whose buffers differ are the floats, and each call feeds them its own
values (``Executable.scalars``). A graph in which a float changes more than
parameters (the HLO: an op that takes it as an attribute, a size; an output
that is the number itself; a parameter holding neither stand-in, a number
the trace computed from one) is traced once per value instead
(``PerValue``). Python arithmetic on such a number never reaches the trace:
it runs on the host before the graph (``partition.on_host``), and the
graph is fed its result.
"""
from __future__ import annotations

import torch

from . import _xlac
from .plan import Plan, Source, make_plan
from .trace import run


def float_positions(args) -> tuple:
    return tuple(i for i, a in enumerate(args) if type(a) is float)


def _stand_in(n: int, which: int) -> float:
    """The ``n``-th float's stand-in in trace ``which``: exact in bf16 for
    small ``n``, never a value torch_xla folds into the graph (0, 1)."""
    return 2.5 + n if which == 0 else -3.75 - n


def stand_ins(args, positions, which: int) -> tuple:
    """``args`` with the floats at ``positions`` replaced by stand-ins."""
    args = list(args)
    for n, i in enumerate(positions):
        args[i] = _stand_in(n, which)
    return tuple(args)


def fed_parameters(positions, first, second) -> dict | None:
    """{buffer handle in ``first``: argument position} for the HLO
    parameters the floats at ``positions`` feed, from two traces made with
    different stand-ins (each ``(plan, results)``); None when the floats
    change more than those parameters."""
    (plan, results), (other_plan, other_results) = first, second
    if not results or _xlac.graph_hash(results) != _xlac.graph_hash(other_results):
        return None
    if _plain_outputs(plan) != _plain_outputs(other_plan):
        return None
    ids, values = _xlac.graph_parameters(results)
    other_ids, other_values = _xlac.graph_parameters(other_results)
    if len(ids) != len(other_ids):
        return None
    seed_id = _xlac.seed_parameter_id()
    fed: dict = {}
    pairs = zip(ids, values, other_values, _xlac.data_handles(values), _xlac.data_handles(other_values))
    for tid, value, other, handle, other_handle in pairs:
        if handle == other_handle or tid == seed_id:
            continue
        found = [i for n, i in enumerate(positions)
                 if value.dim() == 0 and _holds(value, _stand_in(n, 0)) and _holds(other, _stand_in(n, 1))]
        if len(found) > 1:
            return None
        if found:
            fed[handle] = found[0]
        elif not _same_value(value, other):
            return None  # a constant the floats changed (a number computed from one in the trace)
    if _kept_as_constants(plan, fed):
        return None
    return fed


def _same_value(value: torch.Tensor, other: torch.Tensor) -> bool:
    """Do two parameters of two traces hold one value (a constant the trace
    made twice, a private copy of an argument)?"""
    return value.shape == other.shape and value.dtype == other.dtype and torch.equal(value.cpu(), other.cpu())


def _holds(value: torch.Tensor, number: float) -> bool:
    return bool(value.cpu() == torch.tensor(number, dtype=value.dtype))


def _plain_outputs(plan: Plan) -> list:
    """The outputs that are no tensors (numbers, None)."""
    return [v.payload for v in plan.outputs
            if v.source is Source.CONST and not isinstance(v.payload, torch.Tensor)]


def _kept_as_constants(plan: Plan, fed: dict) -> bool:
    """Would an output or an update be a float's stand-in buffer, as it is?"""
    values = plan.outputs + [v for _, v in plan.copy_backs]
    tensors = [v.payload for v in values if v.source is Source.CONST and isinstance(v.payload, torch.Tensor)]
    return bool(tensors) and any(h in fed for h in _xlac.data_handles(tensors))


def scalar_data(value: float, dtype: torch.dtype, device: str) -> torch.Tensor:
    """``value`` as the 0-dim device buffer of an HLO parameter of ``dtype``
    (torch_xla reuses one buffer per value it has seen)."""
    return torch.full((), value, dtype=dtype, device=device)


def fed_by_floats(gm, args, device: str, positions, seed: int, first) -> dict | None:
    """``fed_parameters`` of ``first`` (the ``(plan, results)`` of a trace
    on ``stand_ins(args, positions, 0)``, begun at RNG ``seed``) and of a
    second trace made here with other stand-ins."""
    _xlac.set_rng_seed(seed, device)
    try:
        second = make_plan(run(gm, stand_ins(args, positions, 1), device))
    except Exception:  # the stand-ins are no values the graph takes (``math.sqrt`` of a negative)
        return None
    return fed_parameters(positions, first, second)
