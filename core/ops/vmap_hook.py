"""The vmap hook of functions that are not declared ops (the random functions, dropout).

Declared ops get it from their generated fronts (:mod:`ember.ops.declare`); a python function
with :func:`hooked` hands its call to ``ember.func``'s batching handler while a vmap runs in this
thread, and otherwise costs one flag check.
"""
from __future__ import annotations

import functools

from .. import _state

__all__ = ["hooked"]

_vm = _state.vmap
_vmap_open = _state.vmap_open


def hooked(name: str):
    """Decorator: inside ``ember.func.vmap`` the call goes to the batching handler as ``name``."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if _vmap_open[0] and _vm.depth:
                return _vm.call(name, fn, *args, **kwargs)
            return fn(*args, **kwargs)
        return wrapper
    return deco
