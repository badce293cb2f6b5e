"""``ember.backends``: PyTorch's switches for how backends may compute (``ember.backends.cuda``,
``ember.backends.cudnn``...) and its ``is_available()`` queries for libraries (``mps``, ``mkldnn``,
``openmp``...). The core only holds the flags; a backend reads them."""
from __future__ import annotations

import importlib as _importlib

_PRECISIONS = ("highest", "high", "medium")
#: PyTorch's ``torch.backends.<name>`` modules; ember holds their switches and honest answers
#: (``is_available()`` is False for the libraries ember does not use)
_SUBMODULES = ("cuda", "cudnn", "mps", "mkldnn", "mkl", "openmp", "opt_einsum", "cpu", "mha", "nnpack", "cusparselt",
               "kleidiai")
_float32_matmul_precision = ["highest"]


def set_float32_matmul_precision(precision: str) -> None:
    """``"highest"`` (full float32), ``"high"`` or ``"medium"`` (TF32 or bfloat16-based
    matmuls allowed where a backend has them), as ``torch.set_float32_matmul_precision``."""
    if precision not in _PRECISIONS:
        raise RuntimeError(f"set_float32_matmul_precision: expected one of {', '.join(_PRECISIONS)}, got {precision!r}")
    _float32_matmul_precision[0] = precision


def get_float32_matmul_precision() -> str:
    return _float32_matmul_precision[0]


def __getattr__(name):
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'ember.backends' has no attribute {name!r}")
