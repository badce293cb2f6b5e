"""ember: a deep-learning framework with the PyTorch programming model, whose compute backends
are plugins (``import ember as torch``).

``import ember`` loads no plugin: backends are found through the ``ember`` entry-point group
the first time a device is needed (see :mod:`ember.hookspecs`). It does load every op (the
families of :mod:`ember.ops`) and binds the Tensor methods; ``nn``, ``optim``, ``utils``,
``distributed`` and the other libraries load on first use, except ``multiprocessing``, whose
import registers how tensors cross process boundaries (shared memory), as ``import torch`` does.

The public names are the union of the ``__all__`` lists of the modules imported below
(``tests/test_public_names.py`` checks it); docs/design.md describes the layers.
"""

import importlib as _importlib

from . import (_complex_methods, _devices, _dtype, _methods, _plugins, _threads, _toplevel, amp, autograd, ops,
               return_types)
from . import _registry_hooks  # noqa: F401  (plugs the op/module/optimizer registries into the plugin manager)
from . import multiprocessing as _multiprocessing  # noqa: F401  (tensors cross multiprocessing queues shared, as after import torch)
from ._device import device
from ._dlpack import from_dlpack, to_dlpack
from ._dtype import (bfloat16, bool, can_cast, cdouble, cfloat, complex64, complex128, double, dtype, finfo, float,
                     float16, float32, float64, get_default_dtype, half, iinfo, int, int8, int16, int32, int64, long,
                     promote_types, result_type, set_default_dtype, short, uint8)
from ._layout import layout, sparse_coo, strided
from ._legacy import CPU_CLASSES as _CPU_CLASSES
from ._repr import set_printoptions
from ._storage import UntypedStorage
from ._tensor import Size, Tensor
from ._threads import *  # noqa: F401,F403
from ._toplevel import *  # noqa: F401,F403
from ._version import __version__
from .amp import autocast
from .amp.state import *  # noqa: F401,F403  (is_autocast_enabled, get_autocast_dtype, ...)
from .autograd import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                       set_grad_enabled)
from .backends import get_float32_matmul_precision, set_float32_matmul_precision
from .hookspecs import hookimpl
from .ops import *  # noqa: F401,F403  (every op front end: ember.add, ember.matmul, ...)
from .ops.creation import range_ as range  # noqa: A001  (torch.range, deprecated)
from .ops.random import default_generator as _default_generator_for
from .ops.sparse import sparse_coo_tensor, spmm
from .utils import _einops_hook

_methods.install()
_einops_hook.install()  # einops takes ember tensors once it is imported (ember.utils.einops_backend)
_complex_methods.install()
globals().update(_CPU_CLASSES)

# memory formats, as names (the layouts ember.strided and ember.sparse_coo are objects)
contiguous_format = "contiguous_format"
preserve_format = "preserve_format"
channels_last = "channels_last"

__all__ = sorted(
    set(ops.__all__) | set(_toplevel.__all__) | set(_threads.__all__) | set(amp.state.__all__) | set(_dtype.__all__)
    | set(_CPU_CLASSES)
    | {"Tensor", "Size", "UntypedStorage", "device", "hookimpl", "from_dlpack", "to_dlpack", "set_printoptions",
       "enable_grad", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "no_grad",
       "set_grad_enabled", "get_float32_matmul_precision", "set_float32_matmul_precision", "range", "strided",
       "contiguous_format", "preserve_format", "channels_last", "sparse_coo", "layout", "sparse_coo_tensor",
       "spmm", "autograd", "ops", "return_types", "amp", "__version__", "autocast", "compile"})

_LAZY_SUBMODULES = {"nn", "optim", "utils", "distributed", "testing", "cuda", "serialization", "cli", "backend",
                    "backends", "hookspecs", "sparse", "linalg", "special", "fft", "onnx", "jit", "multiprocessing",
                    "profiler", "amp", "cpu", "accelerator", "hub", "func", "version", "compiler", "_dynamo",
                    "_inductor", "signal", "distributions"}


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        try:
            return _importlib.import_module(f"ember.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"ember.{name}":
                raise
            raise AttributeError(f"module 'ember' has no attribute {name!r} (ember.{name} is not built yet)") from None
    if name == "compile":  # ember.compiler (a library) loads on first use
        return _importlib.import_module("ember.compiler").compile
    if name == "default_generator":
        return _default_generator_for(_devices.cpu())
    if name in ("save", "load"):
        mod = _importlib.import_module("ember.serialization")
        if hasattr(mod, name):
            return getattr(mod, name)
    # an op a plugin registers (ember.rms_norm), looked up before the plugins were loaded
    return _plugins.plugin_attr(__name__, name)
