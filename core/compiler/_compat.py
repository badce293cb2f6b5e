"""Names of ``torch.compiler`` and ``torch._dynamo`` that steer a tracing compiler, for code that
calls them: ``ember.compile`` records kernel calls instead of tracing Python bytecode, so most of
them have nothing to steer and return what they were given (each docstring says what it does)."""
from __future__ import annotations

from . import _capture as C
from ._frontend import compile

__all__ = ["allow_in_graph", "disallow_in_graph", "assume_constant_result", "cudagraph_mark_step_begin",
           "graph_break", "mark_dynamic", "maybe_mark_dynamic", "mark_static", "mark_static_address", "optimize",
           "is_dynamo_supported", "is_inductor_supported", "substitute_in_graph", "nonstrict_trace"]


def allow_in_graph(fn):
    """Returns ``fn``: a capture records the kernels any Python function calls, so there is no graph
    to let it into."""
    return fn


def disallow_in_graph(fn):
    """Returns ``fn`` (see :func:`allow_in_graph`)."""
    return fn


def nonstrict_trace(fn):
    """Returns ``fn`` (see :func:`allow_in_graph`)."""
    return fn


def substitute_in_graph(original_fn, *, can_constant_fold_through=False, skip_signature_check=False):
    """A decorator returning the function it decorates: ember never traces ``original_fn``, so no
    substitute is needed."""
    return lambda fn: fn


def assume_constant_result(fn):
    """Returns ``fn``: it runs on the capturing call only if it computes with python values; a
    result that is a tensor is recorded like any other."""
    return fn


def cudagraph_mark_step_begin() -> None:
    """Does nothing: ember's replays do not use CUDA graphs, so there is no step to mark."""


def graph_break() -> None:
    """Inside a capture, a break: the call runs eagerly (ember does not split a recording), and
    ``ember.compiler.explain`` names this line. Outside a capture, nothing."""
    if C._active:
        C._active[-1].brk("torch._dynamo.graph_break() called")


def mark_dynamic(t, index, *, min=None, max=None, specialize_on=None) -> None:
    """Does nothing: ember specialises every shape (a new shape captures a new program, up to
    ``config.cache_size_limit``)."""


def maybe_mark_dynamic(t, index) -> None:
    """Does nothing (see :func:`mark_dynamic`)."""


def mark_static(t, index=None) -> None:
    """Does nothing: shapes are always static in ember's programs."""


def mark_static_address(t, guard=True) -> None:
    """Does nothing: a replay reads each argument's storage where it is on that call."""


def optimize(backend="inductor", *, nopython=False, guard_export_fn=None, guard_fail_fn=None, disable=False,
             dynamic=None, **kwargs):
    """The older spelling of ``compile`` (``torch._dynamo.optimize("inductor")(fn)``): a decorator
    compiling with ``backend``; ``nopython=True`` is ``fullgraph=True``."""
    return compile(backend=backend, fullgraph=nopython, dynamic=dynamic, disable=disable)


def is_dynamo_supported() -> bool:
    """True: ``ember.compile`` runs on every platform ember does."""
    return True


def is_inductor_supported() -> bool:
    """False: ember has no Inductor (its ``backend="inductor"`` is replay with fusion)."""
    return False
