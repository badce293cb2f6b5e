"""``ember.nn``: modules, parameters, ``functional`` (F), ``init`` and ``utils``, with PyTorch's
API and state-dict names.

Names ember.nn does not define are looked up among the modules plugins register through the
``ember_register_modules`` hook (``ember.nn.MyPluginLayer``).
"""
from . import functional, init, modules, parameter, utils
from .modules import *  # noqa: F401,F403  (every layer class; the explicit list is modules/__init__.py)
from .modules import Module
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
from . import parallel
from .parallel import DataParallel
from .._registry_hooks import lookup_module


def __getattr__(name: str):
    cls = lookup_module(name)
    if cls is not None:
        return cls
    raise AttributeError(f"module 'ember.nn' has no attribute {name!r}")
