"""A whole training step compiled as one graph:
``compile_step(model, optimizer, loss_fn, backend)``.

Written as usual (``loss_fn(model(x)).backward(); optimizer.step()``) and
compiled, a step is three graphs: dynamo cannot put ``backward()`` in a graph
and breaks there, AOT autograd runs the backward as a graph of its own, and
``optimizer.step()`` breaks the graph on purpose around its update. On XLA
that is three executables a step, with activations leaving one to enter the
next. Written functionally, the same step is one graph:

    grads, loss = torch.func.grad_and_value(loss_of)(params, state, args, kwargs)
    p.grad.copy_(grads[name])        # each parameter's gradient, in place
    <the optimizer's own step()>     # without the wrappers that break the graph

``torch.func`` puts the backward into the forward's graph; the optimizer's
own algorithm and state run in it too, once the two wrappers torch puts
around ``step`` are taken off (one breaks the graph so that AOT autograd sees
the update under ``no_grad``, which the whole step already runs under; the
other runs hooks and a profiler label). Parameters, their gradients, the
optimizer's state and the model's buffers (BatchNorm statistics) are updated
in place as an eager step leaves them, and are marked as buffer donors, so
on XLA each update is written over the buffer of the value it replaces (the
gradients too: see ``_read_over``).

Where that is not possible (the optimizer has hooks, dynamo cannot capture
the functional step, or captures it as several graphs: a graph break in the
model), the step runs as written, compiled with the same backend, after one
warning.
``as_written=True`` asks for that path from the start.

Differences from the step written as usual: every trainable parameter gets a
gradient (zeros where the loss does not reach it, where eager leaves None and
the optimizer skips it: different only with weight decay or momentum), and
the gradients exist (zeros) before the first step.
"""
from __future__ import annotations

import inspect
import warnings

import torch
from torch._dynamo.utils import counters

__all__ = ["WholeStep", "compile_step"]


def compile_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, loss_fn,
                 backend="aot_torchxla_trace_once", *, as_written: bool = False) -> "WholeStep":
    """A callable ``step(*args, **kwargs) -> loss``: one training step of
    ``model`` on those inputs, the loss being ``loss_fn(model(*args, **kwargs))``,
    compiled with ``backend`` as one graph (see the module's doc)."""
    return WholeStep(model, optimizer, loss_fn, backend, as_written)


class WholeStep:
    """One training step compiled whole; ``one_graph`` says whether it runs
    as one graph (False once it has fallen back to the step as written)."""

    def __init__(self, model, optimizer, loss_fn, backend, as_written: bool = False):
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self._backend = torch._dynamo.lookup_backend(backend) if isinstance(backend, str) else backend
        self._as_written = torch.compile(self._written, backend=self._backend)
        self._whole = torch.compile(self._functional, backend=self._counting)
        self._update = inspect.unwrap(type(optimizer).step)
        self._graphs = 0
        self.one_graph = not as_written
        self.fallback_reason = "" if self.one_graph else "asked for"
        if self.one_graph and _has_hooks(optimizer):
            self._fall_back("the optimizer has step hooks, which run outside any graph")

    def __call__(self, *args, **kwargs):
        if not self.one_graph:
            return self._as_written(args, kwargs)
        self._ensure_grads()
        graphs, breaks = self._graphs, _graph_breaks()
        try:
            with torch.no_grad():  # torch.func.grad differentiates all the same
                loss = self._whole(args, kwargs)
        except torch._dynamo.exc.TorchDynamoException as err:
            # Raised while capturing or compiling, before anything ran: the
            # step as written is still to run (and raises a genuine error).
            self._fall_back(f"dynamo could not capture it: {str(err).splitlines()[0]}")
            return self._as_written(args, kwargs)
        if self._graphs - graphs > 1 or _graph_breaks() != breaks:
            self._fall_back(f"dynamo captured it as {self._graphs - graphs} graphs "
                            f"({_graph_breaks() - breaks} graph breaks)")
        return loss

    def _counting(self, gm, example_inputs):
        self._graphs += 1
        return self._backend(gm, example_inputs)

    def _fall_back(self, reason: str) -> None:
        self.one_graph, self.fallback_reason = False, reason
        warnings.warn(f"the training step of {type(self.model).__name__} does not compile into one "
                      f"graph ({reason}); it runs as written: forward and loss, backward and the "
                      "optimizer's update as separate graphs", stacklevel=3)

    def _ensure_grads(self) -> None:
        """Gradients the step writes into in place (zeros before the first)."""
        for p in self.model.parameters():
            if p.requires_grad and p.grad is None:
                p.grad = torch.zeros_like(p)

    def _functional(self, args, kwargs):
        model, optimizer = self.model, self.optimizer
        params = {n: p for n, p in model.named_parameters() if p.requires_grad}
        state = {**{n: p for n, p in model.named_parameters() if not p.requires_grad},
                 **dict(model.named_buffers())}
        _donate(list(params.values()) + [p.grad for p in params.values()] + list(state.values())
                + [t for s in optimizer.state.values() for t in s.values() if isinstance(t, torch.Tensor)])
        # The state is an argument of the transformed function, not captured:
        # torch.func refuses in-place updates (BatchNorm's) of captured tensors.
        with _PoolsWithIndices():
            grads, loss = torch.func.grad_and_value(self._loss)(params, state, args, kwargs)
        for name, p in params.items():
            p.grad.copy_(_read_over(p.grad, grads[name]))
        self._update(optimizer)
        return loss

    def _loss(self, params, state, args, kwargs):
        out = torch.func.functional_call(self.model, (params, state), args, kwargs)
        return self.loss_fn(out)

    def _written(self, args, kwargs):
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.model(*args, **kwargs))
        loss.backward()
        self.optimizer.step()
        return loss


class _PoolsWithIndices(torch.overrides.TorchFunctionMode):
    """Max pooling of XLA tensors through its ``_with_indices`` form.

    torch_xla implements ``max_pool2d``/``max_pool3d`` as C++ autograd
    functions, which ``torch.func`` cannot differentiate ("cannot use C++
    torch::autograd::Function with functorch transforms"); the
    ``_with_indices`` forms have the ordinary derivative, which XLA lowers
    too. Same values, the indices dropped."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        pool = _WITH_INDICES.get(func)
        wants_indices = kwargs.get("return_indices", len(args) > 6 and args[6])
        if pool is None or wants_indices or args[0].device.type != "xla":
            return func(*args, **kwargs)
        kwargs = {k: v for k, v in kwargs.items() if k != "return_indices"}
        return pool(*args[:6], **kwargs)[0]


_F = torch.nn.functional
_WITH_INDICES = {_F.max_pool2d: _F.max_pool2d_with_indices, torch.max_pool2d: _F.max_pool2d_with_indices,
                 _F.max_pool3d: _F.max_pool3d_with_indices, torch.max_pool3d: _F.max_pool3d_with_indices}


def _read_over(old: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """``new``, computed as if it read ``old``: on XLA, a value only written
    (a gradient) is no parameter of the executable, so its buffer cannot be
    donated, and the step would hold the previous gradients beside the new
    ones until it ends. Selecting between the two with a constant predicate
    makes ``old`` a parameter (a donated one); XLA folds the select away."""
    if old.device.type != "xla":
        return new
    return torch.where(torch.ones((), dtype=torch.bool, device=old.device), new, old)


def _donate(tensors) -> None:
    """Mark the XLA ``tensors`` as buffer donors (a no-op on other devices)."""
    for t in tensors:
        if t.device.type == "xla":
            torch.ops.xla.dynamo_set_buffer_donor_(t, True)


def _has_hooks(optimizer) -> bool:
    from torch.optim import optimizer as opt

    return bool(optimizer._optimizer_step_pre_hooks or optimizer._optimizer_step_post_hooks
                or opt._global_optimizer_pre_hooks or opt._global_optimizer_post_hooks)


def _graph_breaks() -> int:
    return sum(counters["graph_break"].values())
