"""``ember.ops``: every op front end, the op registry (:data:`OPS`) and dispatch.

The public functions of the modules below are re-exported here and as ``ember.<name>``; most
are also ``Tensor`` methods (see :mod:`ember._methods`).
"""
from __future__ import annotations

import types as _types

from . import copy as _copy_mod
from . import elementwise as _elementwise
from . import indexing as _indexing
from . import linalg as _linalg
from . import nn as _nn
from . import primitives
from . import reduction as _reduction
from . import shape as _shape
from . import views as _views
from .. import _factory, _random
from .registry import ALL, OPS, OpDef, dispatch, record, register_op, run
from .declare import composite, defop

_FACTORY_NAMES = ("arange", "as_tensor", "asarray", "empty", "empty_like", "empty_strided", "eye", "from_numpy",
                  "full", "full_like", "linspace", "logspace", "ones", "ones_like", "scalar_tensor", "tensor", "zeros",
                  "zeros_like")
_RANDOM_NAMES = ("bernoulli", "multinomial", "normal", "poisson", "rand", "rand_like", "randint", "randint_like",
                 "randn", "randn_like", "randperm")


def _public(mod) -> dict:
    """Public functions defined in ``mod`` (and aliases of them made there)."""
    out = {}
    for name, obj in vars(mod).items():
        if name.startswith("_") or not callable(obj) or isinstance(obj, (type, _types.ModuleType)):
            continue
        if getattr(obj, "__module__", None) == mod.__name__:
            out[name] = obj
    return out


_exports: dict = {}
for _m in (_copy_mod, _elementwise, _reduction, _linalg, _shape, _indexing, _views, _nn):
    _exports.update(_public(_m))
for _n in _FACTORY_NAMES:
    _exports[_n] = getattr(_factory, _n)
for _n in _RANDOM_NAMES:
    _exports[_n] = getattr(_random, _n)
for _n in ("write_out", "prep2"):
    _exports.pop(_n, None)
_exports.pop("getitem", None)
_exports.pop("setitem", None)
_exports["_to_copy"] = _copy_mod._to_copy
globals().update(_exports)
getitem = _indexing.getitem
setitem = _indexing.setitem
__all__ = sorted(n for n in _exports if not n.startswith("_"))


def __getattr__(name: str):
    from .._registry_hooks import plugin_attr  # an op a plugin registers, before plugins were loaded
    return plugin_attr(__name__, name)
