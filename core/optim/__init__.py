"""``ember.optim``: optimizers with PyTorch's update rules and state layout, and learning-rate
schedulers (:mod:`ember.optim.lr_scheduler`).

Every optimizer is written in ember ops (so it runs on every backend); its update is one op per
parameter group, ``_fused_<name>_`` in :mod:`ember.ops.optim`, which a backend may implement
natively. A name this package does not define is looked up among the optimizers plugins register
through the ``ember_register_optimizers`` hook (``ember.optim.Lookahead`` from a plugin).
"""
from __future__ import annotations

import importlib as _importlib

from . import lr_scheduler
from .adafactor import Adafactor
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam
from .. import _registry_hooks

__all__ = ["ASGD", "Adafactor", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "NAdam", "Optimizer",
           "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam", "lr_scheduler", "swa_utils",
           "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    if name == "swa_utils":  # loads ember.nn: imported on first use, as `import ember.optim` stays light
        return _importlib.import_module(f"{__name__}.swa_utils")
    cls = _registry_hooks.lookup_optimizer(name)
    if cls is None:
        raise AttributeError(f"module 'ember.optim' has no attribute {name!r} (no built-in optimizer and no plugin "
                             f"registers one by that name; `ember plugins` lists the installed plugins)")
    return cls


def __dir__():
    return sorted(set(globals()) | set(_registry_hooks.collect_optimizers()))
