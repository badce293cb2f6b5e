"""``ember._inductor.config``: PyTorch's Inductor settings, accepted and without effect in ember.

A module whose attributes are the settings: ``ember._inductor.config.max_autotune = True`` and
``import ember._inductor.config as ic; ic.triton.cudagraphs = False`` both work. The module's
class hands attribute access to :data:`ember.compiler._config.inductor_config`.
"""
from __future__ import annotations

import sys
import types

from ..compiler._config import inductor_config


class _ConfigModule(types.ModuleType):
    def __getattr__(self, name):
        return getattr(inductor_config, name)

    def __setattr__(self, name, value):
        if name.startswith("__"):
            super().__setattr__(name, value)
        else:
            setattr(inductor_config, name, value)

    def __delattr__(self, name):
        delattr(inductor_config, name)

    def __dir__(self):
        return dir(inductor_config)


def patch(arg=None, **changes):
    """Set Inductor settings for a ``with`` block or a decorated function (no effect in ember)."""
    return inductor_config.patch(arg, **changes)


def get_config_copy() -> dict:
    """The settings as a flat dict."""
    return inductor_config.get_config_copy()


sys.modules[__name__].__class__ = _ConfigModule
