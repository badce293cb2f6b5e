"""The cuda kernel table: ember-cpu-numpy's kernel library (:mod:`ember_cpu_numpy.kernels`) built
over cupy (Chainer's ``xp`` idea: cupy mirrors numpy), ``{**shared, **overrides}`` where cupy
differs or speed asks for cuBLAS/cuRAND directly.

What is overridden, and why:

* ``copy_``/``fill_``: bfloat16 bit patterns, copies between GPUs, overlapping source and target;
* ``uniform_``/``normal_``: the cuRAND generator (:mod:`.random`), bfloat16 targets;
* ``matmul``: cuBLAS ``gemmEx`` for bfloat16 (float32 accumulation) and for float32 with TF32 when
  ``ember.backends.cuda.matmul.allow_tf32`` or the float32 matmul precision allows it;
* ``ufunc.at`` users (scatter_add, scatter_reduce, index_put with accumulate, embedding backward):
  cupy's atomics cover some ufuncs and dtypes only; the rest runs in rounds over unique targets;
* ``_to_copy`` is dropped: the core's decomposition (empty + ``copy_``) handles casts and moves
  between GPUs;
* fused Adam counts its steps on the host (:mod:`.optim`), the update itself is the library's;
* the recurrent-layer kernels (numpy only) are not used: those ops run their decompositions.

bfloat16 arguments of the shared kernels compute in float32 (:func:`.arrays.guard`); kernels that
only move data run on the bit patterns.
"""
from __future__ import annotations

import numpy as np

from ember_cpu_numpy import kernels as library

from . import arrays as A
from .arrays import BF16, cp, nd, wrap

_F32 = np.dtype(np.float32)

#: kernels that only move data: bfloat16 runs on its bit patterns
RAW = frozenset({"clone", "cat", "flip", "index_select", "index", "gather", "embedding"})
#: kernels that handle bfloat16 themselves (in-place ones among them)
SELF = frozenset({"copy_", "fill_", "uniform_", "normal_", "_fused_sgd_", "_fused_adam_", "matmul"})


# -- ufunc.at everywhere ----------------------------------------------------------------------------
_AT_NATIVE = {
    "add": {np.dtype(t) for t in ("float16", "float32", "float64", "int32", "int64", "uint32", "uint64")},
    "maximum": {np.dtype(t) for t in ("float32", "float64", "int32", "int64", "uint32", "uint64")},
    "minimum": {np.dtype(t) for t in ("float32", "float64", "int32", "int64", "uint32", "uint64")},
}


class _AtUfunc:
    """A cupy ufunc whose ``at`` covers every ufunc and dtype: cupy's atomics where they exist,
    else rounds (each round applies one value to every distinct target: as many rounds as the most
    repeated target has values)."""

    def __init__(self, f, name):
        self._f, self._name = f, name

    def __call__(self, *args, **kwargs):
        return self._f(*args, **kwargs)

    def at(self, a, indices, b=None):
        if a.dtype in _AT_NATIVE.get(self._name, ()):
            return self._f.at(a, indices, b)
        key = indices if isinstance(indices, tuple) else (indices,)
        pos = cp.arange(a.size, dtype=np.int64).reshape(a.shape)[key]
        vals = cp.broadcast_to(cp.asarray(b, dtype=a.dtype), pos.shape).reshape(-1)
        pos = pos.reshape(-1)
        flat = a.reshape(-1) if a.flags.c_contiguous else None
        work = flat if flat is not None else a.copy().reshape(-1)
        while pos.size:
            u, first = cp.unique(pos, return_index=True)
            work[u] = self._f(work[u], vals[first])
            keep = cp.ones(pos.size, dtype=bool)
            keep[first] = False
            pos, vals = pos[keep], vals[keep]
        if flat is None:
            a[...] = work.reshape(a.shape)


class _AtNamespace:
    """cupy, with :class:`_AtUfunc` for the ufuncs the shared index kernels call ``.at`` on."""

    def __getattr__(self, name):
        v = getattr(cp, name)
        if name in ("add", "multiply", "maximum", "minimum"):
            v = _AtUfunc(v, name)
        setattr(self, name, v)
        return v


# -- memory ---------------------------------------------------------------------------------------

def _on_device(src, dst):
    """``nd(src)``, as an array on dst's GPU (a peer copy when src lives on another one)."""
    s = nd(src)
    if src._device is dst._device:
        return s
    with cp.cuda.Device(src._device._index):
        c = s if s.flags.c_contiguous else s.copy()
    with cp.cuda.Device(dst._device._index):
        out = cp.empty(c.shape, c.dtype)
        if c.nbytes:
            out.data.copy_from_device(c.data, c.nbytes)
    return out


def k_copy_(dst, src):
    if src._device._type != "cuda":
        raise RuntimeError(f"copy_: cuda_cupy can't read a tensor on {src._device}")
    d = nd(dst)
    s = _on_device(src, dst)
    if src._storage is dst._storage and src._device is dst._device:
        s = s.copy()  # the source overlaps the target: read it whole first
    if src._dtype is BF16 and dst._dtype is not BF16:
        s = A.bits_to_f32(s)
    elif dst._dtype is BF16 and src._dtype is not BF16:
        s = A.f32_to_bits(s.astype(_F32))
    cp.copyto(d, s, casting="unsafe")
    return dst


def k_fill_(dst, value):
    nd(dst).fill(A.bf16_scalar_bits(value) if dst._dtype is BF16 else value)
    return dst


# -- random ---------------------------------------------------------------------------------------

class CudaRandom(library.Random):
    """The library's random kernels (cuRAND behind ``gen.rng``); bfloat16 targets take the bit
    patterns of their float32 samples."""

    def store(self, t, r) -> None:
        if t._dtype is BF16:
            cp.copyto(nd(t), A.f32_to_bits(r))
        else:
            super().store(t, r)


# -- matmul ---------------------------------------------------------------------------------------
_CUDA_R_32F, _CUDA_R_16BF = 0, 14
_COMPUTE_32F, _COMPUTE_32F_FAST_TF32 = 68, 77
_ONE = np.ones((), np.float32)
_ZERO = np.zeros((), np.float32)


def tf32_allowed() -> bool:
    """Whether float32 matmuls may use TF32 tensor cores (PyTorch's two switches)."""
    try:
        import ember.backends.cuda as flags
    except ImportError:
        return False
    return bool(flags.matmul.allow_tf32) or flags.float32_matmul_precision() in ("high", "medium")


def _operand(a):
    """(array, op, ld) for a row-major 2-D operand: C-contiguous as is, the transpose of a
    C-contiguous array through cuBLAS's transpose flag, anything else copied."""
    r, c = a.shape
    isz = a.itemsize
    if a.strides == (c * isz, isz) or c == 1 and a.strides[0] == isz or r == 1 and a.strides[1] == isz:
        return a, 0, max(c, 1), False  # row-major (r, c): column-major (c, r) with ld c
    if a.strides == (isz, r * isz):
        return a, 1, max(r, 1), True  # the transpose of a row-major (c, r)
    a = a.copy()
    return a, 0, max(c, 1), False


def _gemm(x, y, out, dtype_code, compute):
    """out (m, n, row-major, contiguous) = x (m, k) @ y (k, n) through cuBLAS gemmEx: row-major
    C = A B is column-major C^T = B^T A^T."""
    cublas = cp.cuda.cublas
    m, k = x.shape
    n = y.shape[1]
    xa, opx, ldx, _ = _operand(x)
    ya, opy, ldy, _ = _operand(y)
    handle = cp.cuda.device.get_cublas_handle()
    cublas.gemmEx(handle, opy, opx, n, m, k, _ONE.ctypes.data, ya.data.ptr, dtype_code, ldy, xa.data.ptr, dtype_code,
                  ldx, _ZERO.ctypes.data, out.data.ptr, dtype_code, max(n, 1), compute,
                  getattr(cublas, "CUBLAS_GEMM_DEFAULT_TENSOR_OP", 99))
    return out


def _gemm_nd(x, y, dtype_code, compute, out_dtype):
    """Batched (broadcast) matmul as one gemmEx per 2-D slice pair; 1-D operands as in numpy."""
    xs, ys = x.shape, y.shape
    x2 = x.reshape((1,) + xs) if x.ndim == 1 else x
    y2 = y.reshape(ys + (1,)) if y.ndim == 1 else y
    batch = np.broadcast_shapes(x2.shape[:-2], y2.shape[:-2])
    m, k, n = x2.shape[-2], x2.shape[-1], y2.shape[-1]
    out = cp.empty(batch + (m, n), out_dtype)
    if m and n:
        if not k:
            out.fill(0)
        else:
            xb = cp.broadcast_to(x2, batch + (m, k))
            yb = cp.broadcast_to(y2, batch + (k, n))
            for idx in np.ndindex(*batch):
                _gemm(xb[idx], yb[idx], out[idx], dtype_code, compute)
    shape = batch + ((m,) if x.ndim > 1 else ()) + ((n,) if y.ndim > 1 else ())
    return out.reshape(shape)


def k_matmul(a, b):
    x, y = nd(a), nd(b)
    if a._dtype is BF16:
        if hasattr(cp.cuda, "cublas"):
            return wrap(_gemm_nd(x, y, _CUDA_R_16BF, _COMPUTE_32F, np.uint16), a._device, BF16)
        r = cp.matmul(A.bits_to_f32(x), A.bits_to_f32(y))
        return wrap(A.f32_to_bits(r), a._device, BF16)
    if x.dtype == _F32 and tf32_allowed():
        return wrap(_gemm_nd(x, y, _CUDA_R_32F, _COMPUTE_32F_FAST_TF32, _F32), a._device)
    return wrap(cp.matmul(x, y), a._device)


# -- gather with deferred bounds checks (EMBER_CUDA_INDEX_CHECKS=lazy) -------------------------------

def k_gather_lazy(x, d, index):
    """gather without waiting for the GPU: reads through clamped indices, flags bad ones on the
    device; :mod:`.checks` raises at the next synchronization point."""
    from . import checks
    a, idx = nd(x), nd(index)
    n = a.shape[d]
    if idx.size:
        checks.defer(x._device._index, "gather", n, d, ((idx < 0) | (idx >= n)).any())
        idx = cp.clip(idx, 0, max(n - 1, 0))
    sl = tuple(slice(None) if i == d else slice(0, k) for i, k in enumerate(idx.shape))
    return wrap(cp.take_along_axis(a[sl], idx, axis=d), x._device)


# -- the table --------------------------------------------------------------------------------------

def namespace(xp=None) -> library.ArrayNamespace:
    """The kernel library's namespace over cupy (or ``xp``, a cupy look-alike), with this
    backend's tensor adapters and ``cupyx.scipy.special``."""
    from cupyx.scipy import special
    return library.ArrayNamespace(cp if xp is None else xp, nd, wrap, special, cp.lib.stride_tricks.as_strided)


def build_table(multi_device: bool) -> dict:
    from . import checks, optim as _optim
    own = {library.Random: CudaRandom, library.Optim: _optim.CudaOptim}  # the groups this backend subclasses
    table = library.build_table(namespace(), [own.get(g, g) for g in library.GROUPS])
    at = library.Indexing(namespace(_AtNamespace())).table()
    for name in ("scatter_add", "scatter_reduce", "index_put", "embedding_backward"):
        table[name] = at[name]
    del table["_to_copy"]
    table.update({"copy_": k_copy_, "fill_": k_fill_, "matmul": k_matmul})
    if checks.LAZY:
        table["gather"] = k_gather_lazy
    out = {}
    for name, k in table.items():
        mode = "raw" if name in RAW else "self" if name in SELF else "f32"
        out[name] = A.guard(k, bf16=mode, multi_device=multi_device)
    return out


OUT_KERNELS = library.OUT_KERNELS
