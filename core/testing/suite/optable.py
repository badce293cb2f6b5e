"""The conformance suite's op table: each entry runs an ember op and its numpy float64 reference
on the same values, for the dtypes and layouts that make sense for it.

``PRIMITIVE_CASES`` cover ember.ops.primitives; ``COMPOSITE_CASES`` cover the ops built on them.
Entries with ``grad=True`` are also gradchecked in float64.
"""
from __future__ import annotations

import math

import numpy as np

import ember
from ember.testing.helpers import BackendCase as C

F = (ember.float32, ember.float64)
F16 = (ember.float16, ember.bfloat16, ember.float32, ember.float64)
I = (ember.int32, ember.int64)
ALLNUM = (ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float32, ember.float64)
S = (3, 4)
S3 = (2, 3, 4)
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _erfinv_ref(y):
    y = np.asarray(y, dtype=np.float64)
    x = np.zeros_like(y)
    # bisection on erf, then Newton: exact to float64 for |y| < 1
    lo, hi = np.full_like(y, -6.0), np.full_like(y, 6.0)
    for _ in range(80):
        mid = (lo + hi) / 2
        below = _erf(mid) < y
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    x = (lo + hi) / 2
    return x


def _np_round_half_even(x):
    return np.round(x)


def _sum(x, dim=None, keepdim=False):
    return np.sum(x, axis=dim, keepdims=keepdim)


def _mean(x, dim=None, keepdim=False):
    return np.mean(x, axis=dim, keepdims=keepdim)


POS = {"low": 0.1, "high": 4.0}
UNIT = {"low": -0.95, "high": 0.95}

PRIMITIVE_CASES = [
    C("neg", ember.neg, np.negative, [S], dtypes=F16 + I, grad=True),
    C("abs", ember.abs, np.abs, [S], dtypes=F16 + I, grad=False),
    C("sign", ember.sign, np.sign, [S], dtypes=F + I),
    C("exp", ember.exp, np.exp, [S], dtypes=F16, grad=True),
    C("log", ember.log, np.log, [dict(shape=S, **POS)], dtypes=F16, grad=True),
    C("sin", ember.sin, np.sin, [S], dtypes=F16, grad=True),
    C("cos", ember.cos, np.cos, [S], dtypes=F16, grad=True),
    C("tanh", ember.tanh, np.tanh, [S], dtypes=F16, grad=True),
    C("sqrt", ember.sqrt, np.sqrt, [dict(shape=S, **POS)], dtypes=F16, grad=True),
    C("erf", ember.erf, _erf, [S], dtypes=F, grad=True),
    C("floor", ember.floor, np.floor, [S], dtypes=F),
    C("ceil", ember.ceil, np.ceil, [S], dtypes=F),
    C("round", ember.round, _np_round_half_even, [S], dtypes=F),
    C("trunc", ember.trunc, np.trunc, [S], dtypes=F),
    C("logical_not", ember.logical_not, np.logical_not, [S], dtypes=(ember.bool, ember.float32, ember.int64)),
    C("add", ember.add, np.add, [S, S], dtypes=F16 + I, grad=True),
    C("add_broadcast", ember.add, np.add, [S3, (3, 1)], dtypes=F, grad=True),
    C("add_scalar", lambda x: ember.add(x, 2.5), lambda x: x + 2.5, [S], dtypes=F, grad=True),
    C("sub", ember.sub, np.subtract, [S, S], dtypes=F + I, grad=True),
    C("rsub_scalar", lambda x: 3 - x, lambda x: 3 - x, [S], dtypes=F + I),
    C("mul", ember.mul, np.multiply, [S, (4,)], dtypes=F16 + I, grad=True),
    C("div", ember.div, np.divide, [S, dict(shape=S, exclude_zero=True)], dtypes=F, grad=True),
    C("div_int_true", ember.div, np.divide, [S, dict(shape=S, exclude_zero=True)], dtypes=I,
      rtol=1e-6, atol=1e-6),
    C("div_trunc_int", lambda a, b: ember.div(a, b, rounding_mode="trunc"),
      lambda a, b: np.trunc(a / b), [S, dict(shape=S, exclude_zero=True)], dtypes=I),
    C("pow", ember.pow, np.power, [dict(shape=S, **POS), dict(shape=S, low=-2, high=2)], dtypes=F, grad=True),
    C("pow_scalar", lambda x: ember.pow(x, 3), lambda x: x ** 3, [S], dtypes=F + I, grad=True),
    C("maximum", ember.maximum, np.maximum, [S, S], dtypes=F + I, grad=True),
    C("minimum", ember.minimum, np.minimum, [S, S], dtypes=F + I, grad=True),
    C("fmod", ember.fmod, np.fmod, [S, dict(shape=S, exclude_zero=True)], dtypes=F + I),
    C("atan2", ember.atan2, np.arctan2, [S, S], dtypes=F, grad=True),
    C("eq", ember.eq, np.equal, [dict(shape=S, low=0, high=3), dict(shape=S, low=0, high=3)], dtypes=I),
    C("ne", ember.ne, np.not_equal, [dict(shape=S, low=0, high=3), dict(shape=S, low=0, high=3)], dtypes=I),
    C("lt", ember.lt, np.less, [S, S], dtypes=F + I),
    C("le", ember.le, np.less_equal, [S, S], dtypes=F + I),
    C("gt", ember.gt, np.greater, [S, (4,)], dtypes=F + I),
    C("ge", ember.ge, np.greater_equal, [S, S], dtypes=F + I),
    C("logical_and", ember.logical_and, np.logical_and, [S, S], dtypes=(ember.bool, ember.int64, ember.float32)),
    C("logical_or", ember.logical_or, np.logical_or, [S, S], dtypes=(ember.bool, ember.int64)),
    C("logical_xor", ember.logical_xor, np.logical_xor, [S, S], dtypes=(ember.bool, ember.int64)),
    C("bitwise_and", ember.bitwise_and, np.bitwise_and, [S, S], dtypes=(ember.bool,) + I),
    C("bitwise_or", ember.bitwise_or, np.bitwise_or, [S, S], dtypes=(ember.bool,) + I),
    C("bitwise_xor", ember.bitwise_xor, np.bitwise_xor, [S, S], dtypes=(ember.bool,) + I),
    C("where", lambda c, a, b: ember.where(c > 0, a, b), lambda c, a, b: np.where(c > 0, a, b), [S, S, S],
      dtypes=F + I),
    C("sum", ember.sum, _sum, [S3], dtypes=F16 + I, grad=True),
    C("sum_dim", lambda x: ember.sum(x, 1), lambda x: np.sum(x, 1), [S3], dtypes=F + I, grad=True),
    C("sum_dims_keepdim", lambda x: ember.sum(x, (0, 2), keepdim=True), lambda x: np.sum(x, (0, 2), keepdims=True),
      [S3], dtypes=F, grad=True),
    C("prod", lambda x: ember.prod(x, 1), lambda x: np.prod(x, 1), [S3], dtypes=F + I, grad=True),
    C("amax", lambda x: ember.amax(x, 1), lambda x: np.amax(x, 1), [S3], dtypes=F + I, grad=True),
    C("amin", lambda x: ember.amin(x, (0, 1)), lambda x: np.amin(x, (0, 1)), [S3], dtypes=F + I, grad=True),
    C("argmax", lambda x: ember.argmax(x, 1), lambda x: np.argmax(x, 1), [S3], dtypes=F + I),
    C("argmin", lambda x: ember.argmin(x), lambda x: np.argmin(x), [S3], dtypes=F + I),
    C("cumsum", lambda x: ember.cumsum(x, 1), lambda x: np.cumsum(x, 1), [S3], dtypes=F + I, grad=True),
    C("matmul", ember.matmul, np.matmul, [(3, 5), (5, 2)], dtypes=F, grad=True),
    C("matmul_batched", ember.matmul, np.matmul, [(2, 3, 5), (5, 4)], dtypes=F, grad=True),
    C("matmul_batched_k0", ember.matmul, np.matmul, [(2, 3, 0), (0, 4)], dtypes=F),
    C("matmul_vec", ember.matmul, np.matmul, [(5,), (2, 5, 3)], dtypes=F, grad=True),
    C("matmul_int", ember.matmul, np.matmul, [(3, 5), (5, 2)], dtypes=I),
    C("gather", lambda x: ember.gather(x, 1, ember.tensor([[0, 2], [1, 1], [3, 0]], device=x.device)),
      lambda x: np.take_along_axis(x, np.array([[0, 2], [1, 1], [3, 0]]), 1), [S], dtypes=F + I, grad=True),
    C("scatter_add", lambda x, s: ember.scatter_add(x, 0, ember.tensor([[0, 1, 2, 0]], device=x.device), s),
      lambda x, s: _scatter_add_ref(x, s), [S, (1, 4)], dtypes=F + I, grad=True),
    C("nonzero", lambda x: ember.nonzero(x > 0), lambda x: np.argwhere(x > 0), [S3], dtypes=F + I),
    C("sort", lambda x: ember.sort(x, 1), lambda x: (np.sort(x, 1, kind="stable"), np.argsort(x, 1, kind="stable")),
      [S3], dtypes=F),
    C("sort_desc", lambda x: ember.sort(x, 0, descending=True)[0], lambda x: -np.sort(-x, 0), [S3], dtypes=F + I),
]


def _scatter_add_ref(x, s):
    out = np.array(x, copy=True)
    idx = [0, 1, 2, 0]
    for j in range(4):
        out[idx[j], j] += s[0, j]
    return out


def _np_var(x, axis=None, ddof=1, keepdims=False):
    return np.var(x, axis=axis, ddof=ddof, keepdims=keepdims)


def _lse(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m, axis)


def _softplus(x):
    return np.log1p(np.exp(x))


COMPOSITE_CASES = [
    C("exp2", ember.exp2, np.exp2, [S], dtypes=F, grad=True),
    C("expm1", ember.expm1, np.expm1, [S], dtypes=F, grad=True),
    C("log2", ember.log2, np.log2, [dict(shape=S, **POS)], dtypes=F, grad=True),
    C("log10", ember.log10, np.log10, [dict(shape=S, **POS)], dtypes=F, grad=True),
    C("log1p", ember.log1p, np.log1p, [dict(shape=S, **POS)], dtypes=F, grad=True),
    C("rsqrt", ember.rsqrt, lambda x: 1 / np.sqrt(x), [dict(shape=S, **POS)], dtypes=F, grad=True),
    C("square", ember.square, np.square, [S], dtypes=F + I, grad=True),
    C("reciprocal", ember.reciprocal, np.reciprocal, [dict(shape=S, **POS)], dtypes=F, grad=True),
    C("tan", ember.tan, np.tan, [dict(shape=S, low=-1.2, high=1.2)], dtypes=F, grad=True),
    C("asin", ember.asin, np.arcsin, [dict(shape=S, **UNIT)], dtypes=F, grad=True),
    C("acos", ember.acos, np.arccos, [dict(shape=S, **UNIT)], dtypes=F, grad=True),
    C("atan", ember.atan, np.arctan, [S], dtypes=F, grad=True),
    C("sinh", ember.sinh, np.sinh, [S], dtypes=F, grad=True),
    C("cosh", ember.cosh, np.cosh, [S], dtypes=F, grad=True),
    C("asinh", ember.asinh, np.arcsinh, [S], dtypes=F, grad=True),
    C("acosh", ember.acosh, np.arccosh, [dict(shape=S, low=1.1, high=4)], dtypes=F, grad=True),
    C("atanh", ember.atanh, np.arctanh, [dict(shape=S, **UNIT)], dtypes=F, grad=True),
    C("sigmoid", ember.sigmoid, lambda x: 1 / (1 + np.exp(-x)), [S], dtypes=F, grad=True),
    C("logit", ember.logit, lambda x: np.log(x / (1 - x)), [dict(shape=S, low=0.05, high=0.95)], dtypes=F, grad=True),
    C("erfc", ember.erfc, lambda x: 1 - _erf(x), [S], dtypes=F, grad=True),
    C("erfinv", ember.erfinv, _erfinv_ref, [dict(shape=S, low=-0.9, high=0.9)], dtypes=F, grad=True, rtol=1e-4,
      atol=1e-5),
    C("frac", ember.frac, lambda x: x - np.trunc(x), [S], dtypes=F, grad=True),
    C("round_decimals", lambda x: ember.round(x, decimals=2), lambda x: np.round(x, 2), [S], dtypes=(ember.float64,)),
    C("clamp", lambda x: ember.clamp(x, -1.0, 0.5), lambda x: np.clip(x, -1.0, 0.5), [S], dtypes=F + I, grad=True),
    C("clamp_min", lambda x: ember.clamp(x, min=0), lambda x: np.maximum(x, 0), [S], dtypes=F + I, grad=True),
    C("relu", ember.relu, lambda x: np.maximum(x, 0), [S], dtypes=F, grad=True),
    C("fmax", ember.fmax, np.fmax, [S, S], dtypes=F),
    C("fmin", ember.fmin, np.fmin, [S, S], dtypes=F),
    C("hypot", ember.hypot, np.hypot, [S, S], dtypes=F, grad=True),
    C("lerp", lambda a, b: ember.lerp(a, b, 0.3), lambda a, b: a + 0.3 * (b - a), [S, S], dtypes=F, grad=True),
    C("floor_divide", ember.floor_divide, np.floor_divide, [S, dict(shape=S, exclude_zero=True)], dtypes=F + I),
    C("remainder", ember.remainder, np.remainder, [S, dict(shape=S, exclude_zero=True)], dtypes=F + I),
    C("div_floor", lambda a, b: ember.div(a, b, rounding_mode="floor"), np.floor_divide,
      [S, dict(shape=S, exclude_zero=True)], dtypes=F + I),
    C("isclose", lambda a, b: ember.isclose(a, a + b * 1e-9), lambda a, b: np.isclose(a, a + b * 1e-9, 1e-5, 1e-8),
      [S, S], dtypes=(ember.float64,)),
    C("mean", ember.mean, _mean, [S3], dtypes=F16, grad=True),
    C("mean_dim", lambda x: ember.mean(x, (0, 2), keepdim=True), lambda x: np.mean(x, (0, 2), keepdims=True), [S3],
      dtypes=F, grad=True),
    C("nansum", ember.nansum, np.nansum, [S3], dtypes=F),
    C("var", lambda x: ember.var(x, 1), lambda x: np.var(x, 1, ddof=1), [S3], dtypes=F, grad=True),
    C("var_unbiased_false", lambda x: ember.var(x, unbiased=False), lambda x: np.var(x), [S3], dtypes=F, grad=True),
    C("std", lambda x: ember.std(x, (0, 2)), lambda x: np.std(x, (0, 2), ddof=1), [S3], dtypes=F, grad=True),
    C("std_correction", lambda x: ember.std(x, 1, correction=0, keepdim=True),
      lambda x: np.std(x, 1, keepdims=True), [S3], dtypes=F, grad=True),
    C("logsumexp", lambda x: ember.logsumexp(x, 1), lambda x: _lse(x, 1), [S3], dtypes=F, grad=True),
    C("norm", ember.norm, lambda x: np.sqrt(np.sum(x * x)), [S3], dtypes=F, grad=True),
    C("norm_p1_dim", lambda x: ember.norm(x, 1, dim=1), lambda x: np.sum(np.abs(x), 1), [S3], dtypes=F),
    C("norm_inf", lambda x: ember.norm(x, float("inf")), lambda x: np.max(np.abs(x)), [S3], dtypes=F),
    C("norm_p3", lambda x: ember.norm(x, 3, dim=-1), lambda x: np.sum(np.abs(x) ** 3, -1) ** (1 / 3), [S3], dtypes=F,
      grad=True),
    C("all", lambda x: ember.all(x > -2, 1), lambda x: np.all(x > -2, 1), [S3], dtypes=F + I),
    C("any", lambda x: ember.any(x > 2), lambda x: np.any(x > 2), [S3], dtypes=F + I),
    C("count_nonzero", lambda x: ember.count_nonzero(x, 0), lambda x: np.count_nonzero(x, 0),
      [dict(shape=S3, low=-1, high=2)], dtypes=I),
    C("max_dim", lambda x: ember.max(x, 1), lambda x: (np.max(x, 1), np.argmax(x, 1)), [S3], dtypes=F + I),
    C("max_dim_grad", lambda x: ember.max(x, 1).values, lambda x: np.max(x, 1), [S3], dtypes=F, grad=True),
    C("min_dim_keepdim", lambda x: ember.min(x, 2, keepdim=True).values, lambda x: np.min(x, 2, keepdims=True), [S3],
      dtypes=F + I, grad=True),
    C("max_all", ember.max, np.max, [S3], dtypes=F + I),
    C("median", lambda x: ember.median(x, 1).values, lambda x: np.sort(x, 1)[:, (x.shape[1] - 1) // 2], [S3],
      dtypes=F, grad=True),
    C("median_all", ember.median, lambda x: np.sort(x.reshape(-1))[(x.size - 1) // 2], [S3], dtypes=F),
    C("cumprod", lambda x: ember.cumprod(x, 1), lambda x: np.cumprod(x, 1), [S3], dtypes=F, grad=True),
    C("cummax", lambda x: ember.cummax(x, 2).values, lambda x: np.maximum.accumulate(x, 2), [S3], dtypes=F + I,
      grad=True),
    C("logcumsumexp", lambda x: ember.logcumsumexp(x, 1), lambda x: np.log(np.cumsum(np.exp(x), 1)), [S3], dtypes=F,
      grad=True),
    C("mm", ember.mm, np.matmul, [(3, 4), (4, 5)], dtypes=F, grad=True),
    C("bmm", ember.bmm, np.matmul, [(2, 3, 4), (2, 4, 5)], dtypes=F, grad=True),
    C("mv", ember.mv, np.matmul, [(3, 4), (4,)], dtypes=F, grad=True),
    C("dot", ember.dot, np.dot, [(5,), (5,)], dtypes=F, grad=True),
    C("outer", ember.outer, np.outer, [(3,), (4,)], dtypes=F, grad=True),
    C("addmm", lambda i, a, b: ember.addmm(i, a, b, beta=0.5, alpha=2), lambda i, a, b: 0.5 * i + 2 * (a @ b),
      [(3, 5), (3, 4), (4, 5)], dtypes=F, grad=True),
    C("baddbmm", ember.baddbmm, lambda i, a, b: i + a @ b, [(2, 3, 5), (2, 3, 4), (2, 4, 5)], dtypes=F, grad=True),
    C("einsum", lambda a, b: ember.einsum("bij,bjk->bik", a, b), lambda a, b: np.einsum("bij,bjk->bik", a, b),
      [(2, 3, 4), (2, 4, 5)], dtypes=F, grad=True),
    C("einsum_trace", lambda a: ember.einsum("ii", a), lambda a: np.einsum("ii", a), [(4, 4)], dtypes=F, grad=True),
    C("einsum_outer_sum", lambda a, b: ember.einsum("i,j->j", a, b), lambda a, b: np.einsum("i,j->j", a, b),
      [(3,), (4,)], dtypes=F, grad=True),
    C("tensordot", lambda a, b: ember.tensordot(a, b, ([1, 2], [0, 1])),
      lambda a, b: np.tensordot(a, b, ([1, 2], [0, 1])), [(2, 3, 4), (3, 4, 5)], dtypes=F, grad=True),
    C("kron", ember.kron, np.kron, [(2, 3), (3, 2)], dtypes=F + I, grad=True),
    C("trace", ember.trace, np.trace, [(4, 4)], dtypes=F, grad=True),
    C("diag", ember.diag, np.diag, [(4,)], dtypes=F + I, grad=True),
    C("diag_of_matrix", lambda x: ember.diag(x, 1), lambda x: np.diag(x, 1), [(4, 5)], dtypes=F, grad=True),
    C("diag_embed", ember.diag_embed, lambda x: np.stack([np.diag(r) for r in x]), [(2, 3)], dtypes=F, grad=True),
    C("cat", lambda a, b: ember.cat([a, b], 1), lambda a, b: np.concatenate([a, b], 1), [S, (3, 2)], dtypes=F + I,
      grad=True),
    C("stack", lambda a, b: ember.stack([a, b], 2), lambda a, b: np.stack([a, b], 2), [S, S], dtypes=F, grad=True),
    C("flip", lambda x: ember.flip(x, (0, 2)), lambda x: np.flip(x, (0, 2)), [S3], dtypes=F + I, grad=True),
    C("roll", lambda x: ember.roll(x, 2, 1), lambda x: np.roll(x, 2, 1), [S3], dtypes=F + I, grad=True),
    C("rot90", lambda x: ember.rot90(x, 1, (0, 1)), lambda x: np.rot90(x, 1, (0, 1)), [S], dtypes=F, grad=True),
    C("repeat", lambda x: x.repeat(2, 1, 3), lambda x: np.tile(x, (2, 1, 3)), [S], dtypes=F + I, grad=True),
    C("repeat_interleave", lambda x: ember.repeat_interleave(x, 2, 1), lambda x: np.repeat(x, 2, 1), [S],
      dtypes=F, grad=True),
    C("tile", lambda x: ember.tile(x, (2,)), lambda x: np.tile(x, (2,)), [S], dtypes=F, grad=True),
    C("tril", lambda x: ember.tril(x, -1), lambda x: np.tril(x, -1), [S], dtypes=F + I, grad=True),
    C("triu", lambda x: ember.triu(x, 1), lambda x: np.triu(x, 1), [S3], dtypes=F, grad=True),
    C("index_select", lambda x: ember.index_select(x, 1, ember.tensor([3, 0, 0], device=x.device)),
      lambda x: np.take(x, [3, 0, 0], 1), [S], dtypes=F + I, grad=True),
    C("take", lambda x: ember.take(x, ember.tensor([[0, -1], [5, 2]], device=x.device)),
      lambda x: np.take(x, [[0, -1], [5, 2]]), [S], dtypes=F, grad=True),
    C("masked_fill", lambda x: ember.masked_fill(x, x > 0, 0.5), lambda x: np.where(x > 0, 0.5, x), [S], dtypes=F,
      grad=True),
    C("masked_select", lambda x: ember.masked_select(x, x > 0), lambda x: x[x > 0], [S], dtypes=F, grad=True),
    C("getitem_advanced", lambda x: x[ember.tensor([0, 2], device=x.device), 1:3],
      lambda x: x[[0, 2], 1:3], [S], dtypes=F + I, grad=True),
    C("getitem_mask", lambda x: x[x > 0], lambda x: x[x > 0], [S3], dtypes=F, grad=True),
    C("getitem_two_arrays",
      lambda x: x[:, ember.tensor([0, 1], device=x.device), ember.tensor([3, 2], device=x.device)],
      lambda x: x[:, [0, 1], [3, 2]], [S3], dtypes=F, grad=True),
    C("index_add", lambda x, s: ember.index_add(x, 0, ember.tensor([0, 2, 0], device=x.device), s),
      lambda x, s: _index_add_ref(x, s), [S, (3, 4)], dtypes=F, grad=True),
    C("scatter", lambda x, s: ember.scatter(x, 1, ember.tensor([[0, 1], [2, 3], [1, 0]], device=x.device), s),
      lambda x, s: _scatter_ref(x, s), [S, (3, 2)], dtypes=F + I, grad=True),
    C("topk", lambda x: ember.topk(x, 2, 1),
      lambda x: (-np.sort(-x, 1)[:, :2], np.argsort(-x, 1, kind="stable")[:, :2]), [S3], dtypes=F),
    C("kthvalue", lambda x: ember.kthvalue(x, 2, 2).values, lambda x: np.sort(x, 2)[..., 1], [S3], dtypes=F, grad=True),
    C("searchsorted", lambda s, v: ember.searchsorted(ember.sort(s).values, v),
      lambda s, v: np.searchsorted(np.sort(s), v), [(8,), (5,)], dtypes=F),
    C("cross", lambda a, b: ember.cross(a, b, dim=1), lambda a, b: np.cross(a, b, axis=1), [(4, 3), (4, 3)], dtypes=F,
      grad=True),
    C("softplus_composite", lambda x: ember.log1p(ember.exp(x)), _softplus, [S], dtypes=F, grad=True),
]


def _index_add_ref(x, s):
    out = np.array(x, copy=True)
    for j, i in enumerate([0, 2, 0]):
        out[i] += s[j]
    return out


def _scatter_ref(x, s):
    out = np.array(x, copy=True)
    idx = [[0, 1], [2, 3], [1, 0]]
    for i in range(3):
        for j in range(2):
            out[i, idx[i][j]] = s[i, j]
    return out
