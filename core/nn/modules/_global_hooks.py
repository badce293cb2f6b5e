"""Global module hooks (``nn.modules.module.register_module_forward_hook``...): hooks every
module's call runs, before its own (``Module.__call__`` reads the four dicts)."""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable

from ..._graph import RemovableHandle

__all__ = ["register_module_forward_pre_hook", "register_module_forward_hook", "register_module_full_backward_hook",
           "register_module_full_backward_pre_hook"]

_global_forward_pre_hooks: dict = OrderedDict()
_global_forward_hooks: dict = OrderedDict()
_global_backward_hooks: dict = OrderedDict()
_global_backward_pre_hooks: dict = OrderedDict()


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """A forward pre-hook run for every module: ``hook(module, args)``."""
    h = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[h.id] = hook
    return h


def register_module_forward_hook(hook: Callable, *, always_call: bool = False) -> RemovableHandle:
    """A forward hook run for every module: ``hook(module, args, output)``."""
    h = RemovableHandle(_global_forward_hooks)
    _global_forward_hooks[h.id] = hook
    return h


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """A backward hook run for every module: ``hook(module, grad_input, grad_output)``."""
    h = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[h.id] = hook
    return h


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    h = RemovableHandle(_global_backward_pre_hooks)
    _global_backward_pre_hooks[h.id] = hook
    return h
