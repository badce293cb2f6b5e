"""ember: a deep-learning framework with the PyTorch programming model, whose compute backends
are plugins (``import ember as torch``).

``import ember`` loads no plugin: backends are found through the ``ember`` entry-point group
the first time a device is needed (see :mod:`ember.hookspecs`).
"""
from __future__ import annotations

import importlib as _importlib

__version__ = "0.1.0"

from . import _dtype
from . import _plugins
from ._dtype import (bfloat16, bool, can_cast, double, dtype, finfo, float, float16, float32, float64,
                     get_default_dtype, half, iinfo, int, int8, int16, int32, int64, long, promote_types,
                     result_type, set_default_dtype, short, uint8)
from ._device import device
from ._storage import UntypedStorage
from ._tensor import Size, Tensor
from .hookspecs import hookimpl
from . import ops
from .ops import *  # noqa: F401,F403  (every op front end: ember.add, ember.matmul, ...)
from . import _methods as _methods_mod
from .ops.creation import get_default_device, set_default_device
from .ops.random import (Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state)
from .ops.random import default_generator as _default_generator_for
from .autograd import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                       set_grad_enabled)
from ._dlpack import from_dlpack, to_dlpack
from ._repr import set_printoptions
from . import return_types
from ._legacy import CPU_CLASSES as _CPU_CLASSES
from . import autograd

_methods_mod.install()
globals().update(_CPU_CLASSES)
del _CPU_CLASSES

range = _importlib.import_module("ember.ops.creation").range_  # noqa: A001  (torch.range, deprecated)
strided = "strided"
contiguous_format = "contiguous_format"
preserve_format = "preserve_format"
channels_last = "channels_last"
sparse_coo = "sparse_coo"

_LAZY_SUBMODULES = {"nn", "optim", "utils", "distributed", "testing", "cuda", "serialization", "cli", "backend", "backends",
                    "hookspecs", "linalg", "special", "fft", "onnx", "jit", "multiprocessing", "profiler", "amp"}


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        try:
            return _importlib.import_module(f"ember.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"ember.{name}":
                raise
            raise AttributeError(f"module 'ember' has no attribute {name!r} (ember.{name} is not built yet)") from None
    if name == "default_generator":
        from . import _devices
        return _default_generator_for(_devices.cpu())
    if name in ("save", "load"):
        mod = _importlib.import_module("ember.serialization")
        if hasattr(mod, name):
            return getattr(mod, name)
    # an op a plugin registers (ember.rms_norm), looked up before the plugins were loaded
    return _plugins.plugin_attr(__name__, name)


def is_tensor(obj) -> bool:
    """True for ember tensors (and Parameters)."""
    return isinstance(obj, Tensor)


def is_storage(obj) -> bool:
    return isinstance(obj, UntypedStorage)


def is_floating_point(input) -> bool:
    return input.is_floating_point()


def is_complex(input) -> bool:
    return False


def is_nonzero(input) -> bool:
    if input.numel() != 1:
        raise RuntimeError(f"Boolean value of Tensor with {'no' if input.numel() == 0 else 'more than one'} value"
                           f"{'s' if input.numel() != 1 else ''} is ambiguous")
    return input.item() != 0


def numel(input) -> int:
    return input.numel()


def typename(obj) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    return type(obj).__module__ + "." + type(obj).__qualname__


def compile(model=None, **kwargs):
    """ember has no compiler: returns ``model`` unchanged (so code calling ``torch.compile`` runs)."""
    if model is None:
        return lambda m: m
    return model


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Accepted for compatibility: ember's kernels are deterministic on cpu."""


def are_deterministic_algorithms_enabled() -> bool:
    return True


def set_float32_matmul_precision(precision: str) -> None:
    """``"highest"``, ``"high"`` or ``"medium"``: whether float32 matmuls may use TF32 (cuda)."""
    from .backends import set_float32_matmul_precision as _set
    _set(precision)


def get_float32_matmul_precision() -> str:
    from .backends import get_float32_matmul_precision as _get
    return _get()


def set_num_threads(n: int) -> None:
    """Threads each backend may use inside one op (cpu_numpy: its BLAS threads); applies to
    backends loaded now and later. DataLoader workers set 1, as in PyTorch."""
    import builtins
    from . import _plugins, _state
    if isinstance(n, builtins.bool) or not isinstance(n, builtins.int) or n < 1:  # bool/int are dtypes here
        raise ValueError(f"set_num_threads expects a positive integer, got {n!r}")
    _state.threads.n = n
    for be in _plugins.loaded_backends():
        be.set_num_threads(n)


def get_num_threads() -> int:
    """The thread count set with :func:`set_num_threads`, or what the cpu backend uses."""
    import os
    from . import _plugins, _state
    if _state.threads.n is not None:
        return _state.threads.n
    for be in _plugins.loaded_backends():
        n = be.get_num_threads() if be.device_type == "cpu" else None
        if n is not None:
            return n
    return os.cpu_count() or 1


def set_num_interop_threads(n: int) -> None:
    """Accepted for compatibility: ember runs ops on the calling thread, there is no inter-op
    pool to size. The value is checked and reported back by :func:`get_num_interop_threads`."""
    import builtins
    from . import _state
    if isinstance(n, builtins.bool) or not isinstance(n, builtins.int) or n < 1:
        raise ValueError(f"set_num_interop_threads expects a positive integer, got {n!r}")
    _state.threads.interop = n


def get_num_interop_threads() -> int:
    from . import _state
    return _state.threads.interop


def set_default_tensor_type(t) -> None:
    """Legacy: sets the default floating dtype from a tensor type such as ``ember.DoubleTensor``."""
    from ._legacy import parse_type_string
    if isinstance(t, str):
        dt, _ = parse_type_string(t)
    else:
        dt = t._legacy_dtype
    set_default_dtype(dt)


def plugins():
    """The plugins ember knows about (loading them if needed): name -> ``PluginInfo``."""
    from . import _plugins
    _plugins.load()
    return dict(_plugins.plugins)
