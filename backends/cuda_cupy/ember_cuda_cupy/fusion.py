"""Fused elementwise chains for ``ember.compile`` (``Backend.fuse_elementwise``): one cupy
``ElementwiseKernel`` per chain.

The chain becomes one CUDA C expression over its inputs ``x0, x1, ...``: each op's expression with
its operands replaced by an input (read as ``float``) or by the expression of the op before it.
cupy's elementwise kernel machinery does the rest (broadcasting, any strides, the output array).
Intermediates stay in registers as ``float``: float32 results are the op-by-op ones up to the
compiler's contraction of a multiply and an add, float16 ones are rounded once, at the end, not
after each op (as PyTorch's fused kernels do). Python numbers are written in as the exact bit
pattern of the value the op-by-op kernels would use (the number rounded to the chain's dtype),
through ``__int_as_float``. NaN goes through ``relu``, ``maximum`` and ``minimum`` as numpy's
versions pass it (``fmaxf`` would drop it). A kernel is compiled once per distinct expression.
"""
from __future__ import annotations

import struct

import numpy as np

__all__ = ["fuse_elementwise", "expression"]

#: each fusible op as a C expression of its operands ({0}, {1}), in float
_OPS = {
    "neg": "(-{0})", "abs": "fabsf({0})", "exp": "expf({0})", "log": "logf({0})", "sin": "sinf({0})",
    "cos": "cosf({0})", "tanh": "tanhf({0})", "sqrt": "sqrtf({0})", "relu": "_ember_relu({0})",
    "sigmoid": "(1.0f / (1.0f + expf(-({0}))))",
    "add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "div": "({0} / {1})",
    "maximum": "_ember_max({0}, {1})", "minimum": "_ember_min({0}, {1})",
}

PREAMBLE = """
__device__ __forceinline__ float _ember_relu(float x) { return (x > 0.0f || x != x) ? x : 0.0f; }
__device__ __forceinline__ float _ember_max(float a, float b) { return (a != a || a > b) ? a : b; }
__device__ __forceinline__ float _ember_min(float a, float b) { return (a != a || a < b) ? a : b; }
"""
# (_ember_max: a NaN ``a`` is returned; a NaN ``b`` fails ``a > b`` and is returned: NaN either way)

_KINDS = {np.dtype(np.float32): "float", np.dtype(np.float16): "float16"}
_kernels: dict = {}


def _literal(v, dtype) -> str:
    x = np.float32(np.asarray(v, dtype=dtype))  # the number as the op-by-op kernel rounds it
    bits = struct.unpack("<I", struct.pack("<f", float(x)))[0]
    return f"__int_as_float(0x{bits:08x})"


def expression(chain):
    """The chain as one C expression in float over ``x0, x1, ...``, or None when an op is not
    one this module writes."""
    dt = np.dtype(chain.dtype.np) if hasattr(chain.dtype, "np") else np.dtype(chain.dtype)
    exprs: list = []
    for name, args in chain.ops:
        form = _OPS.get(name)
        if form is None or form.count("{") != len(args):
            return None
        terms = []
        for a in args:
            if isinstance(a, tuple):
                terms.append(f"((float)x{a[1]})" if a[0] == "in" else exprs[a[1]])
            else:
                terms.append(_literal(a, dt))
        exprs.append(form.format(*terms))
    return exprs[-1]


def fuse_elementwise(chain, cp, nd, wrap):
    """The fused callable of ``chain`` (``cp``: cupy; ``nd``/``wrap``: the backend's tensor ->
    array and array -> tensor), or None to decline (another dtype, too many inputs, an op not
    written here)."""
    dt = np.dtype(chain.dtype.np) if hasattr(chain.dtype, "np") else np.dtype(chain.dtype)
    if dt not in _KINDS or not chain.inputs or len(chain.inputs) > 16:
        return None
    expr = expression(chain)
    if expr is None:
        return None
    key = (expr, len(chain.inputs), dt)
    kern = _kernels.get(key)
    if kern is None:
        n = len(chain.inputs)
        name = "ember_fused_" + "_".join(op for op, _ in chain.ops)[:80]
        kern = _kernels[key] = cp.ElementwiseKernel(
            ", ".join(f"T x{i}" for i in range(n)), "T out", f"out = (T)({expr})", name, preamble=PREAMBLE)
    device = chain.device

    def fused(*inputs):
        if device._index != cp.cuda.runtime.getDevice():  # cupy allocates on the current device
            with cp.cuda.Device(device._index):
                return wrap(kern(*[nd(t) for t in inputs]), device)
        return wrap(kern(*[nd(t) for t in inputs]), device)
    fused.__name__ = "fused_" + "_".join(op for op, _ in chain.ops)
    fused.source = expr
    return fused
