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
    (``"cpu"``, ``"cuda"``, ``"opencl"``, or a new type: a backend for anything but numpy-viewable
    host memory takes a new one), ``loader`` is a lazy ``"pkg.mod:Class"`` string naming an
    :class:`ember.backend.Backend` subclass, imported only when the device is first used (importing
    it must not change process-wide settings), and ``priority`` picks between backends serving the
    same device type (highest wins, for the whole process). ``dtypes`` (names or ember dtypes)
    declares the supported element types without opening a device; by default it is read from
    the class. docs/backends.md is the contract.
    """


@hookspec
def ember_register_ops(register: Callable[..., None]) -> None:
    """Register new ops, declared as ember declares its own (:mod:`ember.ops.declare`).

    * ``register(name, meta, *, decomposition=None, backward=None, ...)`` declares a kernel op
      (:func:`ember.ops.declare.defop`): ``meta(...)`` validates the arguments (raising
      PyTorch's exception types) and returns the dispatch plan ``(device, kernel_args, inputs)``
      (or ``(None, result, None)`` when it answers without a kernel); ``decomposition(*kernel_args)``
      computes the op in other ops; ``backward(ctx, grad)`` returns one gradient per tensor of
      ``inputs``. Further keywords: ``saves``, ``save_output``, ``differentiable``, ``inplace``,
      ``result``, ``out``, ``exact_dtype``, ``method`` (default False), ``group``, ``doc``.
    * ``register(name, impl=fn, ...)`` declares an op written in other ops
      (:func:`ember.ops.declare.composite`).

    ember generates the public function from the declaration (the meta's or ``fn``'s signature
    plus ``out=``; the in-place form with ``inplace=True``; Tensor methods with ``method=True``,
    where the names are free) and ``register`` returns it. It becomes ``ember.ops.<name>``, and
    ``ember.<name>`` unless that name is taken; the declaration is ``ember.ops.OPS[name]``. An op
    name that exists already is an error.
    """


@hookspec
def ember_register_kernels(backend: str, register: Callable[[str, Callable], None]) -> None:
    """Register kernels for ops on the already registered backend named ``backend``.

    Called once for every backend when it loads. ``register(op_name, kernel, supports_out=False)``
    installs a kernel (replacing a backend's own); a plugin may speed up any backend this way. A
    kernel takes the op's kernel arguments (the ``kernel_args`` of its meta's plan; for a
    primitive, the signature in :data:`ember.ops.primitives.SIGNATURES`), runs with autograd
    off and returns what the op's decomposition returns; with ``supports_out=True`` it also
    accepts ``out=``, a tensor to write the result into.
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
