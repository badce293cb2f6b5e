"""``ember.autograd``: define-by-run reverse-mode differentiation.

Every op with a backward formula records one node (``tensor.grad_fn``) when an input requires
grad; ``backward()`` walks the graph once in reverse (:mod:`ember.autograd.engine`).
"""
from __future__ import annotations

import importlib
import warnings

from .. import _state
from . import engine, functional, graph
from .engine import _is_checkpoint_valid, backward, grad
from .function import Function, FunctionCtx, InplaceFunction, NestedIOFunction, once_differentiable
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .graph import Node

__all__ = ["Function", "FunctionCtx", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "is_grad_enabled", "gradcheck", "gradgradcheck", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "once_differentiable", "Node", "GradcheckError"]


def Variable(data, requires_grad: bool = False, volatile: bool = False):
    """Legacy ``torch.autograd.Variable``: returns ``data`` itself (tensors carry autograd)."""
    if requires_grad:
        data.requires_grad_(True)
    return data


Variable._execution_engine = engine  # PyTorch's home of queue_callback


class detect_anomaly:
    """Record the forward stack of every node and check backward results for NaN inside the
    block; an error in backward then shows the forward call that made the failing node."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self.prev = (_state.anomaly.enabled, _state.anomaly.check_nan)
        _state.anomaly.enabled = True
        _state.anomaly.check_nan = self.check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", UserWarning, stacklevel=2)
        return self

    def __exit__(self, *exc):
        _state.anomaly.enabled, _state.anomaly.check_nan = self.prev
        return False


class set_detect_anomaly:
    """``set_detect_anomaly(True)`` turns anomaly detection on (also a context manager)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = (_state.anomaly.enabled, _state.anomaly.check_nan)
        _state.anomaly.enabled = bool(mode)
        _state.anomaly.check_nan = check_nan

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _state.anomaly.enabled, _state.anomaly.check_nan = self.prev
        return False


def is_anomaly_enabled() -> bool:
    return _state.anomaly.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return _state.anomaly.check_nan


def __getattr__(name):
    # ember.autograd.profiler (PyTorch's older profiler names) sits on ember.profiler, a library
    # above this layer: loaded on first use, as ember's lazy submodules are
    if name == "profiler":
        return importlib.import_module("ember.autograd.profiler")
    raise AttributeError(f"module 'ember.autograd' has no attribute {name!r}")
