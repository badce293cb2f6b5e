"""Grad-mode switches: no_grad, enable_grad, set_grad_enabled, inference_mode (thread-local)."""
from __future__ import annotations

import functools
import inspect

from .. import _state

_grad = _state.grad


class _DecoratorContextManager:
    """A context manager that also works as a decorator (``@ember.no_grad()`` and ``@ember.no_grad``)."""

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"{type(self).__name__} expects a callable, got {type(func).__name__}")
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                with self.clone():
                    yield from func(*args, **kwargs)
            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def clone(self):
        return type(self)()


class _SetMode(_DecoratorContextManager):
    """Sets grad mode to ``_mode`` inside the block; usable as ``@cls()`` and as bare ``@cls``."""

    _mode = True

    def __new__(cls, func=None):
        self = super().__new__(cls)
        if func is not None and callable(func):  # bare decorator: @no_grad
            return self(func)
        return self

    def __init__(self, func=None):
        self.prev = True

    def __enter__(self):
        self.prev = _grad.enabled
        _grad.enabled = self._mode
        return None

    def __exit__(self, *exc):
        _grad.enabled = self.prev
        return False


class no_grad(_SetMode):
    """Disable gradient recording inside the block (or function)."""

    _mode = False


class enable_grad(_SetMode):
    """Enable gradient recording inside the block (even under no_grad)."""

    _mode = True


class set_grad_enabled(_DecoratorContextManager):
    """``set_grad_enabled(False)`` switches recording off; works as a function, a context
    manager and a decorator."""

    def __init__(self, mode: bool):
        self.prev = _grad.enabled
        self.mode = bool(mode)
        _grad.enabled = self.mode

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _grad.enabled = self.prev
        return False

    def clone(self):
        return set_grad_enabled(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like no_grad; tensors made inside report ``is_inference()``... ember keeps no separate
    inference tensors, so this is no_grad with a flag."""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):
            self.__init__(True)
            return self(mode)
        return self

    def __init__(self, mode: bool = True):
        self.mode = bool(mode) if not callable(mode) else True
        self.prev = True
        self.prev_inf = False

    def __enter__(self):
        self.prev = _grad.enabled
        self.prev_inf = _grad.inference
        if self.mode:
            _grad.enabled = False
            _grad.inference = True
        return None

    def __exit__(self, *exc):
        _grad.enabled = self.prev
        _grad.inference = self.prev_inf
        return False

    def clone(self):
        return inference_mode(self.mode)


def is_grad_enabled() -> bool:
    return _grad.enabled


def is_inference_mode_enabled() -> bool:
    return _grad.inference
