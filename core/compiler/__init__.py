"""``ember.compiler``: ``ember.compile`` (PyTorch's ``torch.compile``) by capture and replay.

The first call of a compiled function for given guards runs eagerly while the kernel calls that
dispatch makes are recorded (:mod:`._capture`); later calls that pass the guards (:mod:`._guards`)
replay the recording as one generated function (:mod:`._program`), with chains of elementwise
kernels fused where the backend offers it (:mod:`._fusion`). Whatever the recording cannot replay
faithfully is a break: the call runs eagerly, and :func:`explain` says why. docs/compile.md is
the guide. :mod:`._config` holds the settings, :mod:`._compat` the names of ``torch.compiler`` and
``torch._dynamo`` that steer a tracing compiler and have little to steer here.
"""
from __future__ import annotations

from ._capture import Break
from ._compat import allow_in_graph, assume_constant_result, cudagraph_mark_step_begin, substitute_in_graph
from ._frontend import (CompiledFunction, ExplainOutput, InvalidBackend, Unsupported, compile,
                        compile_module_forward, config, disable, explain, is_compiling, list_backends, reset,
                        set_stance)

is_dynamo_compiling = is_compiling

__all__ = ["compile", "explain", "reset", "disable", "is_compiling", "is_dynamo_compiling", "config", "Unsupported",
           "InvalidBackend", "ExplainOutput", "CompiledFunction", "Break", "list_backends", "compile_module_forward",
           "set_stance", "allow_in_graph", "assume_constant_result", "cudagraph_mark_step_begin",
           "substitute_in_graph"]
