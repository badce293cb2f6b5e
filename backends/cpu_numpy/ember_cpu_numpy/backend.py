"""The cpu_numpy backend: a table from op name to a numpy call, plus a small device class.

Storage data is a flat numpy array; each tensor caches its numpy view (``t._native``), built
from the storage with the tensor's shape, strides and offset. ``KERNELS`` comes from
``make_kernels(xp, nd, wrap)``, which the cupy backend calls with cupy as the array module.
"""
from __future__ import annotations

import math
import os
import struct
import warnings

import numpy as np

import ember
from ember.backend import dtypes as D
from ember.backend import UntypedStorage
from ember.backend import Tensor
from ember.backend import make_tensor as _make
from ember.backend import Backend, IndexOutOfRangeError, contiguous_strides

# numpy reports floating-point exceptions as warnings; PyTorch computes inf/nan silently
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember_cpu_numpy\.")

try:  # accurate erf/erfinv
    from scipy import special as _special
except ImportError:  # pragma: no cover - scipy is a dependency; kept for minimal environments
    _special = None

_CSTRIDES: dict = {}
_FROM_NP: dict = {}


def _ember_dtype(npdt):
    d = _FROM_NP.get(npdt)
    if d is None:
        d = D.from_numpy_dtype(npdt)
        _FROM_NP[npdt] = d
    return d


def nd(t: Tensor) -> np.ndarray:
    """The numpy view of a cpu tensor (cached on the tensor)."""
    a = t._native
    if a is None:
        isz = t._dtype.itemsize
        a = np.ndarray(t._shape, t._dtype.np, t._storage._data, t._offset * isz, tuple(s * isz for s in t._stride))
        t._native = a
    return a


def wrap(a, device) -> Tensor:
    """A tensor owning numpy array ``a`` (kernel results)."""
    if a.__class__ is not np.ndarray:
        a = np.asarray(a)
    dt = _FROM_NP.get(a.dtype)
    if dt is None:
        dt = _ember_dtype(a.dtype)
    shape = a.shape
    if a.flags.c_contiguous:
        st = _CSTRIDES.get(shape)
        if st is None:
            st = contiguous_strides(shape)
            _CSTRIDES[shape] = st
        flat = a.ravel()
    else:
        flat = a.ravel(order="K")
        if (flat.base is a or (a.base is not None and flat.base is a.base)) and all(s >= 0 for s in a.strides):
            isz = a.itemsize
            st = tuple(s // isz for s in a.strides)
        else:
            a = np.ascontiguousarray(a)
            flat = a.reshape(-1)
            st = contiguous_strides(shape)
    return _make(UntypedStorage(flat, a.nbytes, device), shape, st, 0, dt, device, a)


def _dev(*xs):
    for x in xs:
        if isinstance(x, Tensor):
            return x._device
    raise TypeError("no tensor argument")


# -- dtype rules and index checks (host side, shared by every array module) -----------------------
# numpy has few bfloat16 math loops (ml_dtypes adds the basics): bfloat16 inputs compute in float32
_BF16 = D.bfloat16
_BF16_NP = D.bfloat16.np
_F16_NP = np.dtype(np.float16)


def _to32(x):
    return x.astype(np.float32)


def _keep_dtype(a):
    """The accumulator for sum/prod/cumsum/cumprod: float32 for 16-bit floats, the input's own
    dtype for integers (numpy would widen int8..int32 to int64; the contract keeps the dtype)."""
    dt = a.dtype
    if dt.kind in "iub":
        return dt
    return np.float32 if dt is _F16_NP or dt is _BF16_NP else None


def _sum_dtype(a):
    """Accumulate 16-bit floats in float32, as PyTorch does."""
    dt = a.dtype
    return np.float32 if dt is _F16_NP or dt is _BF16_NP else None


def _axes(a, dims):
    """numpy's axis argument: None for a full reduction, which numpy runs faster than the tuple."""
    return None if len(dims) == a.ndim else dims


def _index_error(op, idx, size, dim):
    bad = idx[(idx < 0) | (idx >= size)]
    raise IndexOutOfRangeError(f"{op}: index {int(bad.reshape(-1)[0])} is out of bounds for dimension {dim} with "
                               f"size {size}")


def _check_idx(op, idx, size, dim):
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        _index_error(op, idx, size, dim)


def _region(a, shape, d):
    """``a`` cut down to ``shape`` in every dim but ``d`` (PyTorch lets index be smaller)."""
    if a.shape == shape:
        return a
    sl = tuple(slice(None) if i == d else slice(0, n) for i, n in enumerate(shape))
    return a[sl]


# -- kernel builders ----------------------------------------------------------------------------

_ZERO_BLOCK = 1 << 16
_ZEROS: dict = {}


def _relu_blocks(a: np.ndarray, out=None) -> np.ndarray:
    """maximum(a, 0) for contiguous float arrays, against a block of zeros: numpy has no vector
    loop for maximum with a scalar operand (3x slower than with an array, 0.17 against 0.06 ms for
    512K float32), so it runs in blocks against one cached zero block. Same values as
    maximum(a, 0): NaN propagates, -0.0 gives +0.0."""
    z = _ZEROS.get(a.dtype)
    if z is None:
        z = _ZEROS[a.dtype] = np.zeros(_ZERO_BLOCK, a.dtype)
    if out is None:
        out = np.empty(a.shape, a.dtype)
    src, dst = a.reshape(-1), out.reshape(-1)
    n = src.size
    for i in range(0, n, _ZERO_BLOCK):
        j = min(n, i + _ZERO_BLOCK)
        np.maximum(src[i:j], z[:j - i], out=dst[i:j])
    return out


def make_kernels(xp=np, nd=nd, wrap=wrap, special=_special) -> dict:
    """The op -> kernel table over the array module ``xp`` (Chainer's ``xp`` idea): numpy here;
    ember-cuda-cupy builds its table from the same code with cupy, its own tensor<->array
    adapters (``nd``: the array view of a tensor, ``wrap``: a tensor owning an array) and
    ``cupyx.scipy.special``, then overrides what cupy does differently. Host-side helpers
    (dtype rules, index errors) are shared below the builder."""
    def _unary(f):
        def k(x, out=None):
            a = nd(x)
            if x._dtype is _BF16:
                r = f(_to32(a))
                if r.dtype.kind == "f":  # logical_not & co give bool: keep it
                    r = r.astype(a.dtype)
                if out is None:
                    return wrap(r, x._device)
                xp.copyto(nd(out), r, casting="unsafe")
                return out
            if out is None:
                return wrap(f(a), x._device)
            f(a, out=nd(out))
            return out
        return k


    def _binary(f):
        def k(a, b, out=None):
            if a.__class__ is Tensor:
                x, dev, dt = nd(a), a._device, a._dtype
                y = nd(b) if b.__class__ is Tensor or isinstance(b, Tensor) else b  # Parameter is a subclass
            else:
                x = nd(a) if isinstance(a, Tensor) else a
                y = nd(b) if isinstance(b, Tensor) else b
                t = a if isinstance(a, Tensor) else b
                dev, dt = t._device, t._dtype
            if dt is _BF16:
                r = f(_to32(x) if isinstance(x, xp.ndarray) else x, _to32(y) if isinstance(y, xp.ndarray) else y)
                if r.dtype.kind == "f":
                    r = r.astype(dt.np)
                if out is None:
                    return wrap(r, dev)
                xp.copyto(nd(out), r, casting="unsafe")
                return out
            if out is None:
                return wrap(f(x, y), dev)
            f(x, y, out=nd(out))
            return out
        return k


    def _int_div(x, y, out=None):
        if isinstance(y, xp.ndarray):
            if xp.any(y == 0):
                raise RuntimeError("ZeroDivisionError: integer division by zero")
        elif y == 0:
            raise RuntimeError("ZeroDivisionError: integer division by zero")
        q = xp.floor_divide(x, y)
        r = xp.subtract(x, xp.multiply(q, y))
        fix = (r != 0) & ((xp.less(x, 0)) != (xp.less(y, 0)))  # floor -> toward zero
        q = xp.add(q, xp.asarray(fix).astype(q.dtype))
        if out is not None:
            xp.copyto(out, q, casting="unsafe")
            return out
        return q


    def _div(x, y, out=None):
        dt = x.dtype if isinstance(x, xp.ndarray) else y.dtype
        if dt.kind in "iub":
            return _int_div(x, y, out)
        return xp.true_divide(x, y, out=out) if out is not None else xp.true_divide(x, y)


    def _erf(x, out=None):
        if special is not None:
            # scipy computes float16 in float32: cast back so the result keeps the input dtype
            return special.erf(x, out=out) if out is not None else special.erf(x).astype(x.dtype, copy=False)
        r = np.vectorize(math.erf, otypes=[x.dtype])(x)
        if out is not None:
            out[...] = r
            return out
        return r


    def _erfc(x, out=None):
        r = special.erfc(x).astype(x.dtype, copy=False)  # accurate where 1 - erf(x) underflows
        if out is not None:
            out[...] = r
            return out
        return r


    def _erfinv(x, out=None):
        r = special.erfinv(x).astype(x.dtype, copy=False) if special is not None else None
        if r is None:
            raise NotImplementedError("erfinv needs scipy")
        if out is not None:
            out[...] = r
            return out
        return r


    def _round(x, out=None):
        return xp.round(x, out=out) if out is not None else xp.round(x)


    def k_sum(x, dims, keepdim):
        a = nd(x)
        acc = _keep_dtype(a)
        r = xp.sum(a, axis=_axes(a, dims), keepdims=keepdim, dtype=acc)
        return wrap(xp.asarray(r).astype(a.dtype, copy=False) if acc is not None else r, x._device)


    def k_prod(x, dims, keepdim):
        a = nd(x)
        acc = _keep_dtype(a)
        r = xp.prod(a, axis=_axes(a, dims), keepdims=keepdim, dtype=acc)
        return wrap(xp.asarray(r).astype(a.dtype, copy=False) if acc is not None else r, x._device)


    def _reduce_minmax(f):
        def k(x, dims, keepdim):
            a = nd(x)
            if a.dtype is _BF16_NP:
                return wrap(xp.asarray(f(a.astype(xp.float32), axis=_axes(a, dims), keepdims=keepdim)).astype(a.dtype),
                            x._device)
            return wrap(f(a, axis=_axes(a, dims), keepdims=keepdim), x._device)
        return k


    def _arg_minmax(f):
        def k(x, dim, keepdim):
            a = nd(x)
            if a.dtype is _BF16_NP:
                a = a.astype(xp.float32)
            if dim is None:
                return wrap(xp.asarray(f(a), dtype=xp.int64), x._device)
            return wrap(f(a, axis=dim, keepdims=keepdim).astype(xp.int64, copy=False), x._device)
        return k


    def k_cumsum(x, d):
        a = nd(x)
        acc = _keep_dtype(a)
        r = xp.cumsum(a, axis=d, dtype=acc)
        return wrap(r.astype(a.dtype) if acc is not None else r, x._device)


    def k_cumprod(x, d):
        a = nd(x)
        acc = _keep_dtype(a)
        r = xp.cumprod(a, axis=d, dtype=acc)
        return wrap(r.astype(a.dtype) if acc is not None else r, x._device)


    def _mm(x, y):
        """matmul, with a C-contiguous (..., M, K) @ (K, N) done as one (prod(...) * M, K) GEMM:
        numpy's matmul calls BLAS once per leading index there (35 x (32, 128) @ (128, 1024):
        2.7 ms against 1.3 ms for one GEMM, 1 thread)."""
        if x.ndim > 2 and y.ndim == 2 and x.flags.c_contiguous:
            return xp.matmul(x.reshape(math.prod(x.shape[:-1]), x.shape[-1]), y).reshape(x.shape[:-1] + y.shape[-1:])
        return xp.matmul(x, y)

    def k_matmul(a, b):
        x, y = nd(a), nd(b)
        if x.dtype is _F16_NP or x.dtype is _BF16_NP:  # no BLAS for 16-bit floats: compute in float32
            return wrap(_mm(x.astype(xp.float32), y.astype(xp.float32)).astype(x.dtype), a._device)
        return wrap(_mm(x, y), a._device)


    def k_gather(x, d, index):
        a, idx = nd(x), nd(index)
        _check_idx("gather", idx, a.shape[d], d)
        return wrap(xp.take_along_axis(_region(a, idx.shape, d), idx, axis=d), x._device)


    def _fancy(idx, d):
        """The index tuple addressing a[..., idx along d, ...] for index array ``idx`` (open
        grids elsewhere, as ``np.indices(sparse=True)``, which cupy lacks)."""
        k = idx.ndim
        return tuple(idx if i == d else xp.arange(n).reshape((1,) * i + (n,) + (1,) * (k - 1 - i))
                     for i, n in enumerate(idx.shape))


    def k_scatter_add(x, d, index, src):
        a, idx, s = nd(x), nd(index), nd(src)
        _check_idx("scatter_add", idx, a.shape[d], d)
        out = a.copy()
        xp.add.at(out, _fancy(idx, d), _region(s, idx.shape, d))
        return wrap(out, x._device)


    def k_scatter(x, d, index, src):
        a, idx = nd(x), nd(index)
        _check_idx("scatter", idx, a.shape[d], d)
        out = a.copy()
        out[_fancy(idx, d)] = _region(nd(src), idx.shape, d) if isinstance(src, Tensor) else src
        return wrap(out, x._device)


    def k_scatter_reduce(x, d, index, src, reduce, include_self):
        a, idx, s = nd(x), nd(index), _region(nd(src), index._shape, d)
        _check_idx("scatter_reduce", idx, a.shape[d], d)
        out = a.copy()
        f = _fancy(idx, d)
        if reduce == "mean":
            cnt = xp.zeros(a.shape, dtype=xp.int64)
            xp.add.at(cnt, f, 1)
            if not include_self:
                out[f] = 0
            xp.add.at(out, f, s)
            c = cnt + (1 if include_self else 0)
            hit = cnt > 0
            if out.dtype.kind == "f":
                out[hit] = out[hit] / c[hit]
            else:
                out[hit] = xp.floor_divide(out[hit], c[hit])
            return wrap(out, x._device)
        ufunc = {"sum": xp.add, "prod": xp.multiply, "amax": xp.maximum, "amin": xp.minimum}[reduce]
        if not include_self:
            ident = {"sum": 0, "prod": 1,
                     "amax": -np.inf if a.dtype.kind == "f" else np.iinfo(a.dtype).min if a.dtype.kind in "iu" else False,
                     "amin": np.inf if a.dtype.kind == "f" else np.iinfo(a.dtype).max if a.dtype.kind in "iu" else True}[reduce]
            out[f] = ident
        ufunc.at(out, f, s)
        return wrap(out, x._device)


    def k_nonzero(x):
        return wrap(xp.argwhere(nd(x)).astype(xp.int64, copy=False), x._device)


    def k_sort(x, d, descending, stable):
        a = nd(x)
        work = a.astype(xp.float32) if a.dtype is _BF16_NP else a
        if descending:
            idx = xp.flip(xp.argsort(xp.flip(work, d), axis=d, kind="stable"), d)
            idx = (a.shape[d] - 1) - idx
        else:
            idx = xp.argsort(work, axis=d, kind="stable")
        idx = xp.ascontiguousarray(idx, dtype=xp.int64)
        return (wrap(xp.take_along_axis(a, idx, axis=d), x._device), wrap(idx, x._device))


    def k_copy_(dst, src):
        if src._device is not dst._device and src._device._type != "cpu":
            raise RuntimeError(f"copy_: cpu_numpy can't read a tensor on {src._device}")
        xp.copyto(nd(dst), nd(src), casting="unsafe")
        return dst


    def k_fill_(dst, value):
        nd(dst).fill(value)
        return dst


    def _rand_dtype(a):
        return xp.float64 if a.dtype == xp.float64 else xp.float32


    def k_uniform_(t, low, high, gen):
        a = nd(t)
        r = gen.rng.random(a.shape, dtype=_rand_dtype(a))
        if low != 0.0 or high != 1.0:
            r = r * (high - low) + low
        xp.copyto(a, r, casting="unsafe")
        return t


    def k_normal_(t, mean, std, gen):
        a = nd(t)
        r = gen.rng.standard_normal(a.shape, dtype=_rand_dtype(a))
        if std != 1.0 or mean != 0.0:
            r = r * std + mean
        xp.copyto(a, r, casting="unsafe")
        return t


    # -- native fast paths for composite ops -----------------------------------------------------------

    def k_to_copy(x, dtype, dev):
        return wrap(nd(x).astype(dtype.np, copy=True), dev)


    def k_clone(x):
        return wrap(nd(x).copy(), x._device)


    def k_where(c, a, b):
        r = xp.where(nd(c), nd(a) if isinstance(a, Tensor) else a, nd(b) if isinstance(b, Tensor) else b)
        dt = a._dtype if isinstance(a, Tensor) else b._dtype if isinstance(b, Tensor) else None
        if dt is not None and r.dtype != dt.np:  # a python scalar next to a bfloat16 array widens it
            r = r.astype(dt.np)
        return wrap(r, _dev(a, b, c))


    def k_clamp(x, lo, hi, out=None):
        a = nd(x)
        if out is not None:
            xp.clip(a, lo, hi, out=nd(out))
            return out
        return wrap(xp.clip(a, lo, hi), x._device)


    def k_cat(tensors, d):
        return wrap(xp.concatenate([nd(t) for t in tensors], axis=d), tensors[0]._device)


    def k_index_select(x, d, index):
        return wrap(xp.take(nd(x), nd(index), axis=d), x._device)


    def k_index(x, indices):
        a = nd(x)
        key = tuple(slice(None) if i is None else nd(i) for i in indices)
        return wrap(xp.ascontiguousarray(a[key]), x._device)


    def k_index_put(x, indices, values, accumulate):
        out = nd(x).copy()
        key = tuple(slice(None) if i is None else nd(i) for i in indices)
        if accumulate:
            xp.add.at(out, key, nd(values))
        else:
            out[key] = nd(values)
        return wrap(out, x._device)


    def k_flip(x, dims):
        return wrap(xp.ascontiguousarray(xp.flip(nd(x), dims)), x._device)


    def k_max_dim(x, d, keepdim):
        a = nd(x)
        w = a.astype(xp.float32) if a.dtype is _BF16_NP else a
        i = xp.argmax(w, axis=d, keepdims=True)
        v = xp.take_along_axis(a, i, axis=d)
        if not keepdim:
            v, i = xp.squeeze(v, d), xp.squeeze(i, d)
        return (wrap(v, x._device), wrap(i.astype(xp.int64, copy=False), x._device))


    def k_min_dim(x, d, keepdim):
        a = nd(x)
        w = a.astype(xp.float32) if a.dtype is _BF16_NP else a
        i = xp.argmin(w, axis=d, keepdims=True)
        v = xp.take_along_axis(a, i, axis=d)
        if not keepdim:
            v, i = xp.squeeze(v, d), xp.squeeze(i, d)
        return (wrap(v, x._device), wrap(i.astype(xp.int64, copy=False), x._device))


    def _var(a, dims, correction, keepdim):
        n = 1
        for d in dims:
            n *= a.shape[d]
        r = xp.var(a, axis=_axes(a, dims), ddof=0, keepdims=keepdim, dtype=_sum_dtype(a))  # sum of squares / n
        if n:
            denom = n - correction
            r = r * (n / denom) if denom > 0 else r * n / 0.0  # no degrees of freedom: inf or nan
        return xp.asarray(r)


    def k_var(x, dims, correction, keepdim):
        a = nd(x)
        return wrap(_var(a, dims, correction, keepdim).astype(a.dtype, copy=False), x._device)


    def k_std(x, dims, correction, keepdim):
        a = nd(x)  # the root is taken before 16-bit floats are rounded: one rounding, not two
        return wrap(xp.sqrt(_var(a, dims, correction, keepdim)).astype(a.dtype, copy=False), x._device)


    def k_mean(x, dims, keepdim):
        a = nd(x)
        acc = _sum_dtype(a)
        r = xp.mean(a, axis=dims, keepdims=keepdim, dtype=acc)
        return wrap(xp.asarray(r).astype(a.dtype, copy=False), x._device)


    def k_searchsorted(seq, values, right):
        s, v = nd(seq), nd(values)
        side = "right" if right else "left"
        out = xp.empty(v.shape, dtype=xp.int64)
        s2 = s.reshape(-1, s.shape[-1])
        v2 = v.reshape(-1, v.shape[-1])
        o2 = out.reshape(-1, v.shape[-1])
        for i in range(s2.shape[0]):
            o2[i] = xp.searchsorted(s2[i], v2[i], side=side)
        return wrap(out, seq._device)


    def _check_int_zero(x, y):
        dt = x.dtype if isinstance(x, xp.ndarray) else y.dtype
        if dt.kind in "iu" and (xp.any(y == 0) if isinstance(y, xp.ndarray) else y == 0):
            raise RuntimeError("ZeroDivisionError: integer division by zero")


    def _fmod(x, y, out=None):
        _check_int_zero(x, y)
        return xp.fmod(x, y, out=out) if out is not None else xp.fmod(x, y)


    def _floor_divide(x, y, out=None):
        _check_int_zero(x, y)
        return xp.floor_divide(x, y, out=out) if out is not None else xp.floor_divide(x, y)


    def _remainder(x, y, out=None):
        _check_int_zero(x, y)
        return xp.remainder(x, y, out=out) if out is not None else xp.remainder(x, y)


    def _sigmoid(x, out=None):
        # 1 / (1 + exp(-x)) without overflow warnings for large |x|
        r = (xp.exp(-xp.logaddexp(0, -x)) if x.dtype != np.float16
             else (1 / (1 + xp.exp(-x.astype(np.float32)))).astype(x.dtype))
        if out is not None:
            xp.copyto(out, r, casting="unsafe")
            return out
        return r.astype(x.dtype, copy=False)


    def _relu(x, out=None):
        if xp is np and x.size >= 1024 and x.dtype.kind == "f" and x.flags.c_contiguous and (
                out is None or out.flags.c_contiguous):
            return _relu_blocks(x, out)
        return xp.maximum(x, x.dtype.type(0), out=out) if out is not None else xp.maximum(x, x.dtype.type(0))

    return {
        # memory
        "copy_": k_copy_, "fill_": k_fill_,
        # unary
        "neg": _unary(xp.negative), "abs": _unary(xp.absolute), "sign": _unary(xp.sign),
        "exp": _unary(xp.exp), "log": _unary(xp.log), "sin": _unary(xp.sin), "cos": _unary(xp.cos),
        "tanh": _unary(xp.tanh), "sqrt": _unary(xp.sqrt), "erf": _unary(_erf),
        "floor": _unary(xp.floor), "ceil": _unary(xp.ceil), "round": _unary(_round),
        "trunc": _unary(xp.trunc), "logical_not": _unary(xp.logical_not),
        # binary
        "add": _binary(xp.add), "sub": _binary(xp.subtract), "mul": _binary(xp.multiply),
        "div": _binary(_div), "pow": _binary(xp.power), "maximum": _binary(xp.maximum),
        "minimum": _binary(xp.minimum), "fmod": _binary(_fmod), "atan2": _binary(xp.arctan2),
        "eq": _binary(xp.equal), "ne": _binary(xp.not_equal), "lt": _binary(xp.less),
        "le": _binary(xp.less_equal), "gt": _binary(xp.greater), "ge": _binary(xp.greater_equal),
        "logical_and": _binary(xp.logical_and), "logical_or": _binary(xp.logical_or),
        "logical_xor": _binary(xp.logical_xor), "bitwise_and": _binary(xp.bitwise_and),
        "bitwise_or": _binary(xp.bitwise_or), "bitwise_xor": _binary(xp.bitwise_xor),
        "where": k_where,
        # reductions
        "sum": k_sum, "prod": k_prod, "amax": _reduce_minmax(xp.amax), "amin": _reduce_minmax(xp.amin),
        "argmax": _arg_minmax(xp.argmax), "argmin": _arg_minmax(xp.argmin), "cumsum": k_cumsum,
        "matmul": k_matmul,
        "gather": k_gather, "scatter_add": k_scatter_add, "nonzero": k_nonzero, "sort": k_sort,
        "uniform_": k_uniform_, "normal_": k_normal_,
        # fast paths for composites
        "_to_copy": k_to_copy, "clone": k_clone, "clamp": k_clamp, "cat": k_cat, "index_select": k_index_select,
        "index": k_index, "index_put": k_index_put, "flip": k_flip, "max_dim": k_max_dim, "min_dim": k_min_dim,
        "var": k_var, "std": k_std, "mean": k_mean, "searchsorted": k_searchsorted, "floor_divide": _binary(_floor_divide),
        "remainder": _binary(_remainder), "scatter": k_scatter, "scatter_reduce": k_scatter_reduce, "cumprod": k_cumprod,
        "exp2": _unary(xp.exp2), "expm1": _unary(xp.expm1), "log2": _unary(xp.log2),
        "log10": _unary(xp.log10), "log1p": _unary(xp.log1p), "tan": _unary(xp.tan),
        "asin": _unary(xp.arcsin), "acos": _unary(xp.arccos), "atan": _unary(xp.arctan),
        "sinh": _unary(xp.sinh), "cosh": _unary(xp.cosh), "asinh": _unary(xp.arcsinh),
        "acosh": _unary(xp.arccosh), "atanh": _unary(xp.arctanh), "sigmoid": _unary(_sigmoid),
        "erfinv": _unary(_erfinv), "erfc": _unary(_erfc), "signbit": _unary(xp.signbit), "relu": _unary(_relu),
        "square": _unary(xp.square),
        "reciprocal": _unary(xp.reciprocal), "hypot": _binary(xp.hypot), "fmax": _binary(xp.fmax),
        "fmin": _binary(xp.fmin),
    }


OUT_KERNELS = frozenset({
    "neg", "abs", "sign", "exp", "log", "sin", "cos", "tanh", "sqrt", "erf", "floor", "ceil", "round", "trunc",
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmod", "atan2", "clamp", "exp2", "expm1", "log2",
    "log10", "log1p", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "sigmoid", "relu",
    "square", "reciprocal", "hypot", "fmax", "fmin", "floor_divide", "remainder",
})


class NumpyGenerator:
    """A seeded PCG64 stream; its state serialises to plain bytes (never a pickle)."""

    def __init__(self, seed: int = 67280421310721):
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> None:
        self._seed = int(seed)
        self.rng = np.random.Generator(np.random.PCG64(self._seed))

    def initial_seed(self) -> int:
        return self._seed

    def seed(self) -> int:
        s = int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)
        self.manual_seed(s)
        return s

    def get_state(self) -> np.ndarray:
        st = self.rng.bit_generator.state
        s, inc = st["state"]["state"], st["state"]["inc"]
        raw = (s.to_bytes(16, "little") + inc.to_bytes(16, "little") + struct.pack("<BI", st["has_uint32"], st["uinteger"])
               + self._seed.to_bytes(8, "little"))
        return np.frombuffer(raw, dtype=np.uint8).copy()

    def set_state(self, arr: np.ndarray) -> None:
        raw = bytes(np.asarray(arr, dtype=np.uint8))
        if len(raw) != 45:
            raise RuntimeError(f"set_state: expected a cpu generator state of 45 bytes, got {len(raw)}")
        s = int.from_bytes(raw[:16], "little")
        inc = int.from_bytes(raw[16:32], "little")
        has, uint = struct.unpack("<BI", raw[32:37])
        self._seed = int.from_bytes(raw[37:45], "little")
        bg = np.random.PCG64()
        bg.state = {"bit_generator": "PCG64", "state": {"state": s, "inc": inc}, "has_uint32": has, "uinteger": uint}
        self.rng = np.random.Generator(bg)


from .optim_kernels import KERNELS as _OPTIM_KERNELS  # noqa: E402  (fused optimizer updates; they use nd())
from .nn_kernels import KERNELS as _NN_KERNELS  # noqa: E402  (conv, pooling, norms, softmax...; they use nd())
from .rnn_kernels import KERNELS as _RNN_KERNELS  # noqa: E402  (fused RNN/LSTM/GRU layers; they use nd())


class NumpyBackend(Backend):
    """Device ``cpu``: numpy arrays in host memory."""

    KERNELS = {**make_kernels(np), **_OPTIM_KERNELS, **_NN_KERNELS, **_RNN_KERNELS}
    out_kernels = OUT_KERNELS
    dtypes = frozenset(d.name for d in D.ALL_DTYPES)

    def availability(self):
        return True, ""

    def device_count(self) -> int:
        return 1

    def device_name(self, index) -> str:
        import platform
        return platform.processor() or platform.machine() or "cpu"

    def empty(self, shape, dtype, device):
        a = np.empty(shape, dtype=dtype.np)
        return wrap(a, device)

    def from_numpy(self, array, device, non_blocking: bool = False):
        """Shares memory with ``array`` (positive strides, multiples of the item size)."""
        dt = _ember_dtype(array.dtype)
        isz = array.itemsize
        if array.flags.c_contiguous:
            flat = array.reshape(-1)
            st = contiguous_strides(array.shape)
            return _make(UntypedStorage(flat, array.nbytes, device), array.shape, st, 0, dt, device, array)
        if array.size == 0:
            return wrap(np.empty(array.shape, array.dtype), device)
        span = 1 + sum((s - 1) * (st // isz) for s, st in zip(array.shape, array.strides))
        flat = np.lib.stride_tricks.as_strided(array, shape=(span,), strides=(isz,))
        st = tuple(s // isz for s in array.strides)
        return _make(UntypedStorage(flat, span * isz, device), array.shape, st, 0, dt, device, array)

    def to_numpy(self, tensor) -> np.ndarray:
        return nd(tensor).view()

    def data_ptr(self, storage) -> int:
        return storage._data.ctypes.data if storage._nbytes else 0

    def create_generator(self, device):
        return NumpyGenerator()

    def synchronize(self, device=None) -> None:
        return None

    def set_num_threads(self, n: int) -> None:
        """Limit numpy's BLAS (and OpenMP) thread pools to ``n`` threads (threadpoolctl)."""
        from threadpoolctl import threadpool_limits
        self._thread_limits = threadpool_limits(limits=n)

    def get_num_threads(self) -> int:
        from threadpoolctl import threadpool_info
        counts = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
        return max(counts) if counts else 1
