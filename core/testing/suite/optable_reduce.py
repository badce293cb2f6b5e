"""Op table, reductions: every reduction of the issue with ``dim`` as an int, a negative int or a
tuple, with and without ``keepdim``, against numpy float64 references (values and indices),
on every layout, for the dtypes each supports; gradchecked in float64 where differentiable."""
from __future__ import annotations

import numpy as np

import ember
from ember.testing.helpers import BackendCase as C

F = (ember.float32, ember.float64)
F16 = (ember.float16, ember.bfloat16, ember.float32, ember.float64)
I = (ember.int32, ember.int64)
INTS = (ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64)
B = (ember.bool,)
S3 = (2, 3, 4)
SPECIAL = {"special": True}
SMALLINT = {"low": 0, "high": 3}


def _cum_arg(x, axis, better):
    """numpy reference for cummax/cummin indices: the last index where the running extreme was
    reached (NaN, once seen, stays the extreme), as PyTorch."""
    x = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    out_v = np.empty_like(x)
    out_i = np.zeros(x.shape, dtype=np.int64)
    for idx in np.ndindex(x.shape[:-1]):
        best, bi = None, 0
        for j, v in enumerate(x[idx]):
            if best is None or np.isnan(v) or (not np.isnan(best) and better(v, best)):
                best, bi = v, j
            out_v[idx + (j,)] = best
            out_i[idx + (j,)] = bi
    return np.moveaxis(out_v, -1, axis), np.moveaxis(out_i, -1, axis)


def _mode_values(x, axis):
    x = np.moveaxis(np.asarray(x), axis, -1)
    out = np.empty(x.shape[:-1], dtype=np.float64)
    for idx in np.ndindex(x.shape[:-1]):
        vals, counts = np.unique(x[idx], return_counts=True)
        out[idx] = vals[np.argmax(counts)]  # np.unique sorts, argmax takes the first: the smallest of the modes
    return out


def _median(x, axis=None):
    """The lower median, NaN propagating (as PyTorch)."""
    x = np.asarray(x, dtype=np.float64)
    if axis is None:
        x = x.reshape(-1)
        axis = 0
    s = np.sort(x, axis=axis)
    k = (x.shape[axis] - 1) // 2
    r = np.take(s, k, axis=axis)
    return np.where(np.isnan(x).any(axis=axis), np.nan, r)


def _nanmedian(x, axis):
    x = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    out = np.empty(x.shape[:-1])
    for idx in np.ndindex(x.shape[:-1]):
        v = np.sort(x[idx][~np.isnan(x[idx])])
        out[idx] = v[(len(v) - 1) // 2] if len(v) else np.nan
    return out


def _lcse(x, axis):
    return np.logaddexp.accumulate(np.asarray(x, dtype=np.float64), axis=axis)


def _norm(x, p, axis=None, keepdims=False):
    a = np.abs(x)
    if p == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdims).astype(np.float64)
    if p == np.inf:
        return np.max(a, axis=axis, keepdims=keepdims)
    if p == -np.inf:
        return np.min(a, axis=axis, keepdims=keepdims)
    return np.sum(a ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


REDUCE_CASES = [
    C("sum_neg_tuple_dims", lambda x: ember.sum(x, (-1, 0)), lambda x: np.sum(x, (-1, 0)), [S3], dtypes=F16 + INTS,
      grad=True),
    C("sum_keepdim_neg", lambda x: x.sum(-2, keepdim=True), lambda x: np.sum(x, -2, keepdims=True), [S3], dtypes=F + I,
      grad=True),
    C("sum_dtype", lambda x: ember.sum(x, 1, dtype=ember.float64), lambda x: np.sum(x, 1), [S3], dtypes=INTS + F),
    C("sum_bool", lambda x: x.sum(0), lambda x: np.sum(x, 0), [S3], dtypes=B),
    C("sum_int8_keeps_dtype", lambda x: ember.sum(x, 2, dtype=ember.int8), lambda x: np.sum(x, 2, dtype=np.int8),
      [S3], dtypes=(ember.int8,)),
    C("mean_neg_tuple", lambda x: ember.mean(x, (-1, -3)), lambda x: np.mean(x, (-1, -3)), [S3], dtypes=F16, grad=True),
    C("mean_dtype_int", lambda x: ember.mean(x, 1, dtype=ember.float64), lambda x: np.mean(x, 1), [S3], dtypes=I),
    C("nansum_special", lambda x: ember.nansum(x, 1), lambda x: np.nansum(np.where(np.isinf(x), 0, x), 1),
      [dict(shape=S3, low=-1, high=1)], dtypes=F16),
    C("nansum_nan", lambda x: ember.nansum(ember.where(x > 2, float("nan"), x), (0, 2)),
      lambda x: np.nansum(np.where(x > 2, np.nan, x), (0, 2)), [S3], dtypes=F, grad=True),
    C("nanmean", lambda x: ember.nanmean(ember.where(x > 2, float("nan"), x), -1),
      lambda x: np.nanmean(np.where(x > 2, np.nan, x), -1), [S3], dtypes=F, grad=True),
    C("prod_ints", lambda x: ember.prod(x, -1), lambda x: np.prod(x, -1), [dict(shape=S3, low=-3, high=4)],
      dtypes=(ember.int16, ember.int32, ember.int64)),
    C("prod_all_keepdim", lambda x: ember.prod(x, 1, keepdim=True), lambda x: np.prod(x, 1, keepdims=True), [S3],
      dtypes=F16, grad=True),
    C("prod_with_zero", lambda x: ember.prod(ember.where(x > 2, 0.0, x), 1),
      lambda x: np.prod(np.where(x > 2, 0, x), 1), [S3], dtypes=F, grad=True),
    C("prod_all", ember.prod, np.prod, [(2, 3)], dtypes=F + I, grad=True),
    C("max_dim_keepdim", lambda x: ember.max(x, -1, keepdim=True),
      lambda x: (np.max(x, -1, keepdims=True), np.argmax(x, -1)[..., None]), [S3], dtypes=F16 + INTS + B),
    C("min_dim", lambda x: ember.min(x, 0), lambda x: (np.min(x, 0), np.argmin(x, 0)), [S3], dtypes=F16 + INTS + B),
    C("max_dim_ties_first_index", lambda x: ember.max(x, 1), lambda x: (np.max(x, 1), np.argmax(x, 1)),
      [dict(shape=S3, **SMALLINT)], dtypes=I),
    C("max_min_all", lambda x: ember.stack([ember.max(x), ember.min(x)]), lambda x: np.stack([np.max(x), np.min(x)]),
      [S3], dtypes=F16 + INTS),
    C("max_nan", lambda x: ember.max(x, 1).values, lambda x: np.max(x, 1), [dict(shape=S3, **SPECIAL)], dtypes=F),
    C("min_dim_grad", lambda x: ember.min(x, -1).values, lambda x: np.min(x, -1), [S3], dtypes=F, grad=True),
    C("amax_neg_tuple", lambda x: ember.amax(x, (-1, 0), keepdim=True), lambda x: np.amax(x, (-1, 0), keepdims=True),
      [S3], dtypes=F16 + INTS + B, grad=True),
    C("amin_all", ember.amin, np.amin, [S3], dtypes=F16 + INTS, grad=True),
    C("amax_ties_grad", lambda x: ember.amax(ember.floor(x.detach()) + x * 0, 1),
      lambda x: np.amax(np.floor(x), 1), [S3], dtypes=F),
    C("amax_nan", lambda x: ember.amax(x, -1), lambda x: np.amax(x, -1), [dict(shape=S3, **SPECIAL)], dtypes=F),
    C("argmax_keepdim", lambda x: ember.argmax(x, 0, keepdim=True), lambda x: np.argmax(x, 0)[None], [S3],
      dtypes=F16 + INTS),
    C("argmin_neg_dim", lambda x: ember.argmin(x, -1), lambda x: np.argmin(x, -1), [dict(shape=S3, **SMALLINT)],
      dtypes=F + INTS),
    C("argmax_all_ties", ember.argmax, np.argmax, [dict(shape=S3, **SMALLINT)], dtypes=I),
    C("var_correction2", lambda x: ember.var(x, 2, correction=2), lambda x: np.var(x, 2, ddof=2), [S3], dtypes=F,
      grad=True),
    C("var_tuple_keepdim", lambda x: ember.var(x, (0, -1), keepdim=True), lambda x: np.var(x, (0, -1), ddof=1,
                                                                                        keepdims=True),
      [S3], dtypes=F16, grad=True),
    C("var_unbiased_positional", lambda x: ember.var(x, 1, False), lambda x: np.var(x, 1), [S3], dtypes=F),
    C("std_all", ember.std, lambda x: np.std(x, ddof=1), [S3], dtypes=F16, grad=True),
    C("std_unbiased_false", lambda x: x.std(-1, unbiased=False), lambda x: np.std(x, -1), [S3], dtypes=F, grad=True),
    C("var_mean", lambda x: ember.var_mean(x, 1), lambda x: (np.var(x, 1, ddof=1), np.mean(x, 1)), [S3], dtypes=F,
      grad=True),
    C("std_mean", lambda x: ember.std_mean(x, (0, 2), correction=0, keepdim=True),
      lambda x: (np.std(x, (0, 2), keepdims=True), np.mean(x, (0, 2), keepdims=True)), [S3], dtypes=F, grad=True),
    C("logsumexp_tuple_keepdim", lambda x: ember.logsumexp(x, (0, 2), keepdim=True),
      lambda x: np.log(np.sum(np.exp(x), (0, 2), keepdims=True)), [S3], dtypes=F16, grad=True),
    C("logsumexp_large", lambda x: ember.logsumexp(x, -1), lambda x: np.logaddexp.reduce(x, -1),
      [dict(shape=S3, low=500, high=900)], dtypes=F),
    C("logsumexp_int", lambda x: ember.logsumexp(x, 1), lambda x: np.log(np.sum(np.exp(x), 1)), [S3], dtypes=I),
    C("norm_p0", lambda x: ember.norm(x, 0, dim=1), lambda x: _norm(x, 0, 1), [dict(shape=S3, low=-1, high=2)],
      dtypes=F),
    C("norm_pinf_neg", lambda x: ember.norm(x, float("-inf"), dim=(0, 1)), lambda x: _norm(x, -np.inf, (0, 1)),
      [S3], dtypes=F, grad=True),
    C("norm_frac_p", lambda x: ember.norm(x, 0.5, dim=-1, keepdim=True), lambda x: _norm(x, 0.5, -1, True), [S3],
      dtypes=F, grad=True),
    C("norm_fro_dims", lambda x: ember.norm(x, "fro", dim=(1, 2)), lambda x: np.sqrt(np.sum(x * x, (1, 2))), [S3],
      dtypes=F16, grad=True),
    C("norm_dtype", lambda x: ember.norm(x, dtype=ember.float64), lambda x: np.sqrt(np.sum(x * x)), [S3],
      dtypes=(ember.float32,)),
    C("all_tuple_keepdim", lambda x: ember.all(x, (0, 2), keepdim=True), lambda x: np.all(x, (0, 2), keepdims=True),
      [dict(shape=S3, low=0, high=3)], dtypes=F + INTS + B),
    C("any_neg_dim", lambda x: ember.any(x, -1), lambda x: np.any(x, -1), [dict(shape=S3, low=-1, high=1)],
      dtypes=F16 + INTS + B),
    C("all_any_uint8_dtype", lambda x: ember.stack([ember.all(x, 1), ember.any(x, 1)]),
      lambda x: np.stack([np.all(x, 1), np.any(x, 1)]).astype(np.uint8), [dict(shape=S3, low=0, high=2)],
      dtypes=(ember.uint8,)),
    C("count_nonzero_tuple", lambda x: ember.count_nonzero(x, (0, 2)), lambda x: np.count_nonzero(x, (0, 2)),
      [dict(shape=S3, low=-1, high=2)], dtypes=F + INTS + B),
    C("count_nonzero_all", ember.count_nonzero, np.count_nonzero, [dict(shape=S3, low=-1, high=2)], dtypes=I),
    C("median_dim_keepdim", lambda x: ember.median(x, -1, keepdim=True).values, lambda x: _median(x, -1)[..., None],
      [S3], dtypes=F16 + INTS, grad=True),
    C("median_indices", lambda x: x.gather(1, ember.median(x, 1, keepdim=True).indices) ==
      ember.median(x, 1, keepdim=True).values, lambda x: np.ones((2, 1, 4), bool), [S3], dtypes=F + I),
    C("median_nan", lambda x: ember.median(x, 2).values, lambda x: _median(x, 2), [dict(shape=S3, **SPECIAL)],
      dtypes=F),
    C("median_all_int", ember.median, _median, [S3], dtypes=INTS),
    C("nanmedian", lambda x: ember.nanmedian(x, 1).values, lambda x: _nanmedian(x, 1), [dict(shape=S3, **SPECIAL)],
      dtypes=F),
    C("nanmedian_all", ember.nanmedian, lambda x: _nanmedian(x.reshape(1, -1), 1)[0], [dict(shape=S3, **SPECIAL)],
      dtypes=F),
    C("mode_values", lambda x: ember.mode(x, 1).values, lambda x: _mode_values(x, 1), [dict(shape=S3, **SMALLINT)],
      dtypes=F + INTS + B),
    C("mode_indices_point_at_values", lambda x: x.gather(-1, ember.mode(x, -1, keepdim=True).indices) ==
      ember.mode(x, -1, keepdim=True).values, lambda x: np.ones((2, 3, 1), bool), [dict(shape=S3, **SMALLINT)],
      dtypes=F + I),
    C("mode_grad", lambda x: ember.mode(x, 0).values, lambda x: _mode_values(x, 0), [S3], dtypes=F, grad=True),
    C("cumsum_neg_dim", lambda x: ember.cumsum(x, -1), lambda x: np.cumsum(x, -1), [S3], dtypes=F16 + INTS + B,
      grad=True),
    C("cumsum_dtype", lambda x: ember.cumsum(x, 0, dtype=ember.float64), lambda x: np.cumsum(x, 0), [S3],
      dtypes=INTS + F),
    C("cumprod_ints", lambda x: ember.cumprod(x, 2), lambda x: np.cumprod(x, 2), [dict(shape=S3, low=-2, high=3)],
      dtypes=(ember.int32, ember.int64)),
    C("cumprod_with_zero_grad", lambda x: ember.cumprod(ember.where(x > 2, 0.0, x), 1),
      lambda x: np.cumprod(np.where(x > 2, 0.0, x), 1), [S3], dtypes=F, grad=True),
    C("cummax_values_indices", lambda x: ember.cummax(x, 1), lambda x: _cum_arg(x, 1, np.greater_equal),
      [dict(shape=S3, **SMALLINT)], dtypes=F + INTS),
    C("cummin_values_indices", lambda x: ember.cummin(x, -1), lambda x: _cum_arg(x, -1, np.less_equal),
      [dict(shape=S3, **SMALLINT)], dtypes=F + INTS),
    C("cummax_nan", lambda x: ember.cummax(x, 2), lambda x: _cum_arg(x, 2, np.greater_equal),
      [dict(shape=S3, **SPECIAL)], dtypes=F),
    C("cummin_grad", lambda x: ember.cummin(x, 0).values, lambda x: np.minimum.accumulate(x, 0), [S3], dtypes=F,
      grad=True),
    C("logcumsumexp_wide_range", lambda x: ember.logcumsumexp(x * 300, -1), lambda x: _lcse(x * 300, -1), [S3],
      dtypes=F),
    C("logcumsumexp_f16", lambda x: ember.logcumsumexp(x, 0), lambda x: _lcse(x, 0), [S3], dtypes=F16),
    C("aminmax", lambda x: ember.aminmax(x, dim=1, keepdim=True),
      lambda x: (np.amin(x, 1, keepdims=True), np.amax(x, 1, keepdims=True)), [S3], dtypes=F + INTS),
    C("aminmax_all", ember.aminmax, lambda x: (np.amin(x), np.amax(x)), [S3], dtypes=F16),
]
