"""``ember._dynamo``: the names code written for ``torch._dynamo`` reaches (``explain``, ``reset``,
``config``, ``disable``, ``graph_break``, ``mark_dynamic``, ``optimize``, ``OptimizedModule``...),
from :mod:`ember.compiler`."""
from __future__ import annotations

from ..compiler import (Unsupported, allow_in_graph, assume_constant_result, config, disable, explain, is_compiling,
                        list_backends, reset, set_stance, substitute_in_graph)
from ..compiler._compat import (disallow_in_graph, graph_break, is_dynamo_supported, is_inductor_supported,
                                mark_dynamic, mark_static, mark_static_address, maybe_mark_dynamic, nonstrict_trace,
                                optimize)
from . import eval_frame, exc
from .eval_frame import OptimizedModule

__all__ = ["explain", "reset", "config", "disable", "is_compiling", "list_backends", "Unsupported", "set_stance",
           "allow_in_graph", "disallow_in_graph", "assume_constant_result", "substitute_in_graph", "nonstrict_trace",
           "graph_break", "mark_dynamic", "maybe_mark_dynamic", "mark_static", "mark_static_address", "optimize",
           "is_dynamo_supported", "is_inductor_supported", "OptimizedModule", "eval_frame", "exc"]
