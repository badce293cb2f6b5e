"""``ember.backends.cuda``: ``matmul.allow_tf32`` (False by default, as PyTorch since 1.12: TF32
rounds float32 inputs to 10 mantissa bits) and the reduced-precision reduction switches, read by
the cuda backend's matmul."""
from __future__ import annotations

from . import get_float32_matmul_precision
from .. import _plugins


class _Matmul:
    __slots__ = ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction")

    def __init__(self) -> None:
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    def __repr__(self) -> str:
        return f"<ember.backends.cuda.matmul allow_tf32={self.allow_tf32}>"


matmul = _Matmul()


def float32_matmul_precision() -> str:
    return get_float32_matmul_precision()


def is_built() -> bool:
    """Whether a cuda backend is installed (PyTorch: built with CUDA)."""
    try:
        _plugins.backend_spec("cuda")
        return True
    except RuntimeError:
        return False
