"""The public plugin API of ember: one pluggy project, ``ember``; one entry-point group, ``ember``.

A plugin distribution declares, in its ``pyproject.toml``::

    [project.entry-points.ember]
    myplugin = "ember_myplugin"     # a module whose top level holds hook implementations

and implements any of the hooks below with ``@ember.hookimpl``. Every hook receives a
``register`` callable instead of returning values; built-in parts of ember register through the
same callables. Entry points are loaded once, on first need (the first tensor, the first lookup
of an unknown ``ember.nn`` / ``ember.optim`` name, ``ember plugins``); a plugin that fails to load
never breaks ``import ember`` and its error is reported by ``ember plugins`` and wherever its
device or name is used. ``EMBER_DISABLE_PLUGINS=a,b`` blocks plugins by entry-point name.
"""
from __future__ import annotations

from typing import Callable

import pluggy

hookspec = pluggy.HookspecMarker("ember")
hookimpl = pluggy.HookimplMarker("ember")


@hookspec
def ember_register_backends(register: Callable[..., None]) -> None:
    """Register compute backends.

    Call ``register(name, device_type, loader, priority=0, dtypes=None, description="")``:
    ``name`` identifies the backend (``"cpu_numpy"``), ``device_type`` is the device it serves
    (``"cpu"``, ``"cuda"``, ``"opencl"``, or a new type), ``loader`` is a lazy ``"pkg.mod:Class"``
    string naming an :class:`ember.backend.Backend` subclass, imported only when the device is
    first used, and ``priority`` picks between backends serving the same device type (highest
    wins). ``dtypes`` (names or ember dtypes) declares the supported element types without
    opening a device; by default it is read from the class.
    """


@hookspec
def ember_register_ops(register: Callable[..., None]) -> None:
    """Register new ops.

    Call ``register(name, fn=None, *, meta=None, decomposition=None, backward=None, ...)``
    (see :func:`ember.ops.register_op`). The op becomes ``ember.ops.<name>``; with
    ``fn`` (a python front end that validates its arguments and calls
    ``ember.ops.dispatch``) it is also callable as ``ember.<name>`` unless that name is taken.
    """


@hookspec
def ember_register_kernels(backend: str, register: Callable[[str, Callable], None]) -> None:
    """Register kernels for ops on the already registered backend named ``backend``.

    Called once for every backend when it loads. ``register(op_name, kernel)`` installs a
    kernel (replacing a backend's own); a plugin may speed up any backend this way.
    """


@hookspec
def ember_register_modules(register: Callable[[type], None]) -> None:
    """Register ``ember.nn.Module`` subclasses: ``register(cls, name=None)`` makes the class
    reachable as ``ember.nn.<name or cls.__name__>``."""


@hookspec
def ember_register_optimizers(register: Callable[[type], None]) -> None:
    """Register ``ember.optim.Optimizer`` subclasses: ``register(cls, name=None)`` makes the
    class reachable as ``ember.optim.<name or cls.__name__>``."""


@hookspec
def ember_register_collectives(register: Callable[..., None]) -> None:
    """Register process-group backends for ``ember.distributed``:
    ``register(name, loader, device_types)`` where ``loader`` is a lazy ``"pkg.mod:Class"`` for a
    ``ember.distributed.ProcessGroup`` implementation and ``device_types`` lists the device types
    whose tensors it moves (``("cpu", "opencl")`` for MPI, ``("cuda",)`` for NCCL)."""
