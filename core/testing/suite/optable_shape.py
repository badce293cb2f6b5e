"""Op table, shape and indexing: joining and splitting, gather/scatter and the index_* family,
masked ops, sorting and selection, unique, flips and rolls, repeats, triangles, grids and
broadcasting helpers, searchsorted/bucketize/histc/bincount and advanced indexing, against numpy
references on every layout, gradchecked in float64 where differentiable. Index tensors are made
on the device under test."""
from __future__ import annotations

import numpy as np

import ember
from ember.testing.helpers import BackendCase as C

F = (ember.float32, ember.float64)
F16 = (ember.float16, ember.bfloat16, ember.float32, ember.float64)
I = (ember.int32, ember.int64)
INTS = (ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64)
B = (ember.bool,)
ALL = F16 + INTS + B
S = (3, 4)
S3 = (2, 3, 4)
SMALLINT = {"low": 0, "high": 3}


def L(x, values):
    """An int64 index tensor on ``x``'s device."""
    return ember.tensor(values, dtype=ember.int64, device=x.device)


def _chunks(x, size, axis):
    n = x.shape[axis]
    return tuple(np.take(x, range(i, min(i + size, n)), axis=axis) for i in range(0, n, size))


def _torch_chunk(x, chunks, axis):
    return _chunks(x, -(-x.shape[axis] // chunks), axis)


def _scatter(x, idx, src, dim, op=None):
    out = np.array(x, copy=True)
    for pos in np.ndindex(idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        tgt = tuple(tgt)
        out[tgt] = src[pos] if op is None else op(out[tgt], src[pos])
    return out


def _scatter_reduce(x, idx, src, dim, reduce, include_self):
    out = np.array(x, dtype=np.float64, copy=True)
    groups = {}
    for pos in np.ndindex(idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        groups.setdefault(tuple(tgt), []).append(float(src[pos]))
    for tgt, vals in groups.items():
        vals = ([float(x[tgt])] if include_self else []) + vals
        f = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce]
        out[tgt] = f(vals)
    return out


def _index_put(x, rows, cols, vals, accumulate):
    out = np.array(x, copy=True)
    if accumulate:
        np.add.at(out, (rows, cols), vals)
    else:
        out[rows, cols] = vals
    return out


def _masked_scatter(x, mask, src):
    out = np.array(x, copy=True)
    m = np.broadcast_to(mask, x.shape)
    out[m] = src.reshape(-1)[: int(m.sum())]
    return out


def _stable_desc(x, axis):
    idx = np.argsort(-np.asarray(x, dtype=np.float64), axis=axis, kind="stable")
    return np.take_along_axis(x, idx, axis), idx


def _unique(x):
    v, inv, cnt = np.unique(x, return_inverse=True, return_counts=True)
    return v, inv.reshape(x.shape), cnt


def _unique_dim0(x):
    v, inv, cnt = np.unique(x, axis=0, return_inverse=True, return_counts=True)
    return v, inv.reshape(-1), cnt


def _unique_consecutive(x):
    flat = x.reshape(-1)
    keep = np.concatenate([[True], flat[1:] != flat[:-1]]) if flat.size else np.zeros(0, bool)
    pos = np.flatnonzero(keep)
    counts = np.diff(np.concatenate([pos, [flat.size]]))
    return flat[keep], (np.cumsum(keep) - 1).reshape(x.shape), counts


def _setitem(x, key, value):
    out = np.array(x, copy=True)
    out[key] = value
    return out


def _histc(x, bins, lo, hi):
    h, _ = np.histogram(x, bins=bins, range=(lo, hi))
    return h.astype(np.float64)


def _repeat_interleave(x, reps, axis):
    return np.repeat(x, reps, axis=axis)


SHAPE_CASES = [
    # joining
    C("cat_neg_dim_promote", lambda a, b: ember.cat([a, b.to(ember.float64)], -1),
      lambda a, b: np.concatenate([a, b], -1), [S, (3, 2)], dtypes=ALL, grad=True),
    C("cat_three", lambda a, b, c: ember.cat((a, b, c)), lambda a, b, c: np.concatenate([a, b, c]), [S, (1, 4), (2, 4)],
      dtypes=ALL, grad=True),
    C("concat_alias", lambda a, b: ember.concat([a, b], dim=1), lambda a, b: np.concatenate([a, b], 1), [S, S],
      dtypes=F, grad=True),
    C("concatenate_axis", lambda a, b: ember.concatenate([a, b], axis=0), lambda a, b: np.concatenate([a, b], 0),
      [S, S], dtypes=F),
    C("stack_neg_dim", lambda a, b: ember.stack([a, b], -1), lambda a, b: np.stack([a, b], -1), [S, S], dtypes=ALL,
      grad=True),
    C("hstack", lambda a, b: ember.hstack([a, b]), lambda a, b: np.hstack([a, b]), [S, (3, 2)], dtypes=F + I,
      grad=True),
    C("hstack_1d", lambda a, b: ember.hstack([a, b]), lambda a, b: np.hstack([a, b]), [(3,), (2,)], dtypes=F),
    C("vstack", lambda a, b: ember.vstack([a, b]), lambda a, b: np.vstack([a, b]), [(4,), S], dtypes=F + I, grad=True),
    C("dstack", lambda a, b: ember.dstack([a, b]), lambda a, b: np.dstack([a, b]), [S, S], dtypes=F, grad=True),
    C("column_stack", lambda a, b: ember.column_stack([a, b]), lambda a, b: np.column_stack([a, b]), [(3,), S],
      dtypes=F, grad=True),
    # splitting
    C("split_size", lambda x: ember.split(x, 3, 1), lambda x: _chunks(x, 3, 1), [(3, 7)], dtypes=ALL, grad=True),
    C("split_sections", lambda x: x.split([1, 4, 2], -1), lambda x: tuple(np.split(x, [1, 5], -1)), [(3, 7)],
      dtypes=F + I, grad=True),
    C("split_with_sizes", lambda x: x.split_with_sizes([2, 1]), lambda x: tuple(np.split(x, [2])), [S], dtypes=F),
    C("chunk", lambda x: ember.chunk(x, 3, -1), lambda x: _torch_chunk(x, 3, -1), [(3, 7)], dtypes=F + I, grad=True),
    C("chunk_more_than_size", lambda x: x.chunk(5, 0), lambda x: _torch_chunk(x, 5, 0), [S], dtypes=F),
    C("tensor_split_sections", lambda x: ember.tensor_split(x, 3, 1), lambda x: tuple(np.array_split(x, 3, 1)),
      [(3, 7)], dtypes=ALL, grad=True),
    C("tensor_split_indices", lambda x: ember.tensor_split(x, [1, 5], dim=1), lambda x: tuple(np.split(x, [1, 5], 1)),
      [(3, 7)], dtypes=F, grad=True),
    C("tensor_split_index_tensor", lambda x: ember.tensor_split(x, L(x, [2, -1]), 1),
      lambda x: tuple(np.split(x, [2, 6], 1)), [(3, 7)], dtypes=F),
    C("unbind", lambda x: x.unbind(1), lambda x: tuple(np.moveaxis(x, 1, 0)), [S3], dtypes=ALL, grad=True),
    C("hsplit_vsplit", lambda x: ember.hsplit(x, 2) + ember.vsplit(x, [1]),
      lambda x: tuple(np.hsplit(x, 2)) + tuple(np.vsplit(x, [1])), [S], dtypes=F),
    # gather / scatter
    C("gather_neg_dim_repeats", lambda x: ember.gather(x, -1, L(x, [[3, 3, 0], [1, 0, 1], [2, 2, 2]])),
      lambda x: np.take_along_axis(x, np.array([[3, 3, 0], [1, 0, 1], [2, 2, 2]]), -1), [S], dtypes=ALL, grad=True),
    C("gather_smaller_index", lambda x: ember.gather(x, 0, L(x, [[1, 0], [2, 2]])),
      lambda x: np.take_along_axis(x[:, :2], np.array([[1, 0], [2, 2]]), 0), [S], dtypes=F, grad=True),
    C("gather_int32_index",
      lambda x: ember.gather(x, 1, ember.tensor([[0], [3], [1]], dtype=ember.int32, device=x.device)),
      lambda x: np.take_along_axis(x, np.array([[0], [3], [1]]), 1), [S], dtypes=F),
    C("scatter_value", lambda x: ember.scatter(x, 1, L(x, [[0, 2], [1, 3], [3, 0]]), value=-1.0),
      lambda x: _scatter(x, np.array([[0, 2], [1, 3], [3, 0]]), np.full((3, 2), -1.0), 1), [S], dtypes=F16, grad=True),
    C("scatter_dim0", lambda x, s: ember.scatter(x, 0, L(x, [[2, 0, 1, 1]]), s),
      lambda x, s: _scatter(x, np.array([[2, 0, 1, 1]]), s, 0), [S, S], dtypes=ALL, grad=True),
    C("scatter_reduce_add", lambda x, s: ember.scatter(x, 1, L(x, [[0, 0], [1, 1], [2, 0]]), s, reduce="add"),
      lambda x, s: _scatter(x, np.array([[0, 0], [1, 1], [2, 0]]), s, 1, np.add), [S, (3, 2)], dtypes=F + I),
    C("scatter_reduce_multiply", lambda x, s: ember.scatter(x, 1, L(x, [[0, 0], [1, 1], [2, 0]]), s, reduce="multiply"),
      lambda x, s: _scatter(x, np.array([[0, 0], [1, 1], [2, 0]]), s, 1, np.multiply), [S, (3, 2)], dtypes=F + I),
    C("scatter_add_duplicates", lambda x, s: ember.scatter_add(x, 1, L(x, [[0, 0, 0], [3, 3, 1], [2, 2, 2]]), s),
      lambda x, s: _scatter(x, np.array([[0, 0, 0], [3, 3, 1], [2, 2, 2]]), s, 1, np.add), [S, (3, 3)],
      dtypes=F16 + INTS[1:], grad=True),
    *[C(f"scatter_reduce_{r}_{'self' if inc else 'noself'}",
        lambda x, s, r=r, inc=inc: ember.scatter_reduce(x, 1, L(x, [[0, 0, 2], [3, 1, 3], [1, 1, 1]]), s, r,
                                                         include_self=inc),
        lambda x, s, r=r, inc=inc: _scatter_reduce(x, np.array([[0, 0, 2], [3, 1, 3], [1, 1, 1]]), s, 1, r, inc),
        [S, (3, 3)], dtypes=F + (ember.int64,) if r != "mean" else F, grad=r in ("sum", "mean") and inc)
      for r in ("sum", "prod", "mean", "amax", "amin") for inc in (True, False)],
    # index_*
    C("index_select_neg_dim", lambda x: ember.index_select(x, -1, L(x, [3, 0, 3, 1])),
      lambda x: np.take(x, [3, 0, 3, 1], -1), [S3], dtypes=ALL, grad=True),
    C("index_select_empty_index", lambda x: ember.index_select(x, 0, L(x, [])), lambda x: x[:0], [S], dtypes=F),
    C("index_add_alpha_dim1", lambda x, s: ember.index_add(x, 1, L(x, [3, 0, 3]), s, alpha=2),
      lambda x, s: _scatter(x, np.broadcast_to(np.array([3, 0, 3]), (3, 3)), 2 * s, 1, np.add), [S, (3, 3)],
      dtypes=F + INTS[1:], grad=True),
    C("index_copy", lambda x, s: ember.index_copy(x, 0, L(x, [2, 0]), s),
      lambda x, s: _setitem(x, [2, 0], s), [S, (2, 4)], dtypes=ALL, grad=True),
    C("index_fill_negative", lambda x: ember.index_fill(x, 1, L(x, [-1, 0]), -5),
      lambda x: _setitem(x, (slice(None), [3, 0]), -5), [S], dtypes=F + (ember.int64,),
      grad=True),
    C("index_reduce_prod", lambda x, s: ember.index_reduce(x, 0, L(x, [1, 1]), s, "prod"),
      lambda x, s: _setitem(x, 1, x[1] * s[0] * s[1]), [S, (2, 4)], dtypes=F),
    C("index_put_accumulate", lambda x, v: ember.index_put(x, (L(x, [0, 0, 2]), L(x, [1, 1, -1])), v, accumulate=True),
      lambda x, v: _index_put(x, [0, 0, 2], [1, 1, 3], v, True), [S, (3,)], dtypes=F + INTS[1:], grad=True),
    C("index_put_broadcast_value", lambda x, v: ember.index_put(x, (L(x, [0, 2]),), v),
      lambda x, v: _setitem(x, [0, 2], v), [S, (4,)], dtypes=ALL, grad=True),
    C("index_put_mask", lambda x: ember.index_put(x, (x > 0,), ember.tensor(0.0, dtype=x.dtype, device=x.device)),
      lambda x: np.where(x > 0, 0, x), [S], dtypes=F + (ember.int64,)),
    C("take_negative", lambda x: ember.take(x, L(x, [[-1, 0], [5, -12]])), lambda x: np.take(x, [[-1, 0], [5, -12]]),
      [S], dtypes=ALL, grad=True),
    C("take_along_dim", lambda x: ember.take_along_dim(x, L(x, [[0, 3], [2, 2], [1, 0]]), 1),
      lambda x: np.take_along_axis(x, np.array([[0, 3], [2, 2], [1, 0]]), 1), [S], dtypes=ALL, grad=True),
    C("take_along_dim_broadcast_neg", lambda x: ember.take_along_dim(x, L(x, [[-1, 0]]), dim=-1),
      lambda x: np.take_along_axis(x, np.broadcast_to(np.array([[3, 0]]), (3, 2)), -1), [S], dtypes=F, grad=True),
    C("take_along_dim_flat", lambda x: ember.take_along_dim(x, L(x, [11, 0, 5])),
      lambda x: np.take(x, [11, 0, 5]), [S], dtypes=F),
    C("put", lambda x, s: ember.put(x, L(x, [0, -1, 5]), s), lambda x, s: _put(x, [0, -1, 5], s, False), [S, (3,)],
      dtypes=F + I),
    C("put_accumulate", lambda x, s: ember.put(x, L(x, [1, 1, 5]), s, accumulate=True),
      lambda x, s: _put(x, [1, 1, 5], s, True), [S, (3,)], dtypes=F + I),
    # masked
    C("masked_fill_broadcast_mask", lambda x, m: ember.masked_fill(x, m > 0, -2),
      lambda x, m: np.where(m > 0, -2, x), [S, (4,)], dtypes=F16 + INTS[1:], grad=True),
    C("masked_fill_tensor_value", lambda x, v: x.masked_fill(x > 0, v.sum()), lambda x, v: np.where(x > 0, v.sum(), x),
      [S, (2,)], dtypes=F, grad=True),
    C("masked_select_broadcast", lambda x, m: ember.masked_select(x, m > 0),
      lambda x, m: x[np.broadcast_to(m > 0, x.shape)], [S, (4,)], dtypes=ALL, grad=True),
    C("masked_scatter", lambda x, s: ember.masked_scatter(x, x > 0, s), lambda x, s: _masked_scatter(x, x > 0, s),
      [S, S], dtypes=F + I, grad=True),
    C("masked_scatter_broadcast", lambda x, m, s: ember.masked_scatter(x, m > 0, s),
      lambda x, m, s: _masked_scatter(x, m > 0, s), [S, (4,), (5, 3)], dtypes=F),
    C("nonzero_as_tuple", lambda x: ember.nonzero(x, as_tuple=True), lambda x: np.nonzero(x),
      [dict(shape=S3, low=-1, high=2)], dtypes=ALL),
    C("argwhere", ember.argwhere, np.argwhere, [dict(shape=S3, low=-1, high=2)], dtypes=F + I),
    # sorting and selection
    C("sort_stable_ties", lambda x: ember.sort(x, 1, stable=True),
      lambda x: (np.sort(x, 1, kind="stable"), np.argsort(x, 1, kind="stable")), [dict(shape=S3, **SMALLINT)],
      dtypes=F16 + INTS),
    C("sort_descending_stable", lambda x: ember.sort(x, -1, descending=True, stable=True),
      lambda x: _stable_desc(x, -1), [dict(shape=S3, **SMALLINT)], dtypes=F + I),
    C("sort_bool", lambda x: ember.sort(x, 0).values, lambda x: np.sort(x, 0), [S3], dtypes=B),
    C("sort_grad", lambda x: ember.sort(x, 0, descending=True).values, lambda x: -np.sort(-x, 0), [S3], dtypes=F,
      grad=True),
    C("argsort_desc", lambda x: ember.argsort(x, 1, descending=True), lambda x: np.argsort(-x, 1, kind="stable"), [S3],
      dtypes=F),
    C("msort", ember.msort, lambda x: np.sort(x, 0), [S3], dtypes=F + I),
    C("topk_smallest", lambda x: ember.topk(x, 2, 0, largest=False),
      lambda x: (np.sort(x, 0)[:2], np.argsort(x, 0, kind="stable")[:2]), [S3], dtypes=F16 + I),
    C("topk_grad", lambda x: ember.topk(x, 3).values, lambda x: -np.sort(-x, -1)[..., :3], [S3], dtypes=F, grad=True),
    C("kthvalue_keepdim", lambda x: ember.kthvalue(x, 3, 1, keepdim=True),
      lambda x: (np.sort(x, 1)[:, 2:3], np.argsort(x, 1, kind="stable")[:, 2:3]), [S3], dtypes=F + I),
    # unique
    C("unique_inverse_counts", lambda x: ember.unique(x, return_inverse=True, return_counts=True), _unique,
      [dict(shape=S3, low=0, high=5)], dtypes=F16 + INTS + B),
    C("unique_dim", lambda x: ember.unique(x, dim=0, return_inverse=True, return_counts=True), _unique_dim0,
      [dict(shape=(6, 2), low=0, high=2)], dtypes=F + I),
    C("unique_consecutive", lambda x: ember.unique_consecutive(x, return_inverse=True, return_counts=True),
      _unique_consecutive, [dict(shape=(2, 8), low=0, high=2)], dtypes=F + I + B),
    # flips, rolls, rotations
    C("flip_neg_dims", lambda x: ember.flip(x, (-1, 0)), lambda x: np.flip(x, (-1, 0)), [S3], dtypes=ALL, grad=True),
    C("fliplr_flipud", lambda x: ember.fliplr(x) + ember.flipud(x), lambda x: np.fliplr(x) + np.flipud(x), [S],
      dtypes=F + INTS, grad=True),
    C("roll_multi_negative", lambda x: ember.roll(x, (-1, 5), (0, -1)), lambda x: np.roll(x, (-1, 5), (0, -1)),
      [S3], dtypes=ALL, grad=True),
    C("roll_flat", lambda x: ember.roll(x, 5), lambda x: np.roll(x, 5), [S], dtypes=F + I, grad=True),
    *[C(f"rot90_k{k}", lambda x, k=k: ember.rot90(x, k, [1, 2]), lambda x, k=k: np.rot90(x, k, (1, 2)), [S3],
        dtypes=F + I, grad=True) for k in (-1, 2, 3, 5)],
    # repeats
    C("repeat_leading", lambda x: x.repeat(2, 1, 2), lambda x: np.tile(x, (2, 1, 2)), [S], dtypes=ALL, grad=True),
    C("repeat_interleave_tensor", lambda x: ember.repeat_interleave(x, L(x, [2, 0, 1]), 0),
      lambda x: _repeat_interleave(x, [2, 0, 1], 0), [S], dtypes=F + I, grad=True),
    C("repeat_interleave_flat", lambda x: x.repeat_interleave(2), lambda x: np.repeat(x, 2), [S], dtypes=F + I,
      grad=True),
    C("repeat_interleave_counts_only", lambda x: ember.repeat_interleave(L(x, [2, 0, 3])),
      lambda x: np.repeat(np.arange(3), [2, 0, 3]), [S], dtypes=F),
    C("tile_fewer_dims", lambda x: ember.tile(x, (2,)), lambda x: np.tile(x, (1, 2)), [S3], dtypes=F + I, grad=True),
    C("tile_more_dims", lambda x: x.tile(2, 1, 2), lambda x: np.tile(x, (2, 1, 2)), [S], dtypes=F + B),
    # triangles
    C("tril_batched", lambda x: ember.tril(x, 1), lambda x: np.tril(x, 1), [S3], dtypes=ALL, grad=True),
    C("triu_neg", lambda x: ember.triu(x, -1), lambda x: np.triu(x, -1), [S], dtypes=ALL, grad=True),
    C("tril_indices", lambda x: ember.tril_indices(3, 4, 1, device=x.device),
      lambda x: np.stack(np.tril_indices(3, 1, 4)), [S], dtypes=(ember.float32,)),
    C("triu_indices", lambda x: ember.triu_indices(4, 3, -1, device=x.device),
      lambda x: np.stack(np.triu_indices(4, -1, 3)), [S], dtypes=(ember.float32,)),
    # grids and broadcasting
    C("meshgrid_ij", lambda a, b: ember.meshgrid(a, b, indexing="ij"), lambda a, b: np.meshgrid(a, b, indexing="ij"),
      [(3,), (2,)], dtypes=F + I, grad=True),
    C("meshgrid_xy", lambda a, b, c: ember.meshgrid(a, b, c, indexing="xy"),
      lambda a, b, c: np.meshgrid(a, b, c, indexing="xy"), [(3,), (2,), (4,)], dtypes=F),
    C("broadcast_to", lambda x: ember.broadcast_to(x, (2, 3, 4)), lambda x: np.broadcast_to(x, (2, 3, 4)), [(3, 1)],
      dtypes=ALL, grad=True),
    C("broadcast_tensors", lambda a, b: ember.broadcast_tensors(a, b), lambda a, b: np.broadcast_arrays(a, b),
      [(3, 1), (4,)], dtypes=F + I, grad=True),
    C("broadcast_shapes",
      lambda x: ember.tensor(list(ember.broadcast_shapes((3, 1), (4,), (2, 1, 1))), device=x.device),
      lambda x: np.array(np.broadcast_shapes((3, 1), (4,), (2, 1, 1))), [S], dtypes=(ember.float32,)),
    C("movedim_multi", lambda x: ember.movedim(x, (0, 1), (2, 0)), lambda x: np.moveaxis(x, (0, 1), (2, 0)), [S3],
      dtypes=ALL, grad=True),
    C("moveaxis_swapaxes", lambda x: ember.moveaxis(x, -1, 0) + ember.swapaxes(x, 0, 2).swapdims(1, 2),
      lambda x: np.moveaxis(x, -1, 0) + np.swapaxes(np.swapaxes(x, 0, 2), 1, 2), [(2, 3, 2)], dtypes=F + I, grad=True),
    C("flatten_range", lambda x: ember.flatten(x, 1), lambda x: x.reshape(2, -1), [S3], dtypes=ALL, grad=True),
    C("flatten_neg", lambda x: x.flatten(0, -2), lambda x: x.reshape(-1, 4), [S3], dtypes=F, grad=True),
    C("unflatten", lambda x: x.unflatten(-1, (2, -1)), lambda x: x.reshape(2, 3, 2, 2), [S3], dtypes=F + I, grad=True),
    C("ravel", ember.ravel, np.ravel, [S3], dtypes=F + B, grad=True),
    # searchsorted & histograms
    C("searchsorted_right", lambda s, v: ember.searchsorted(ember.sort(s).values, v, right=True),
      lambda s, v: np.searchsorted(np.sort(s), v, side="right"), [(8,), (2, 5)], dtypes=F + I),
    C("searchsorted_side_int32", lambda s, v: ember.searchsorted(ember.sort(s).values, v, side="right", out_int32=True),
      lambda s, v: np.searchsorted(np.sort(s), v, side="right").astype(np.int32), [(8,), (5,)], dtypes=F),
    C("searchsorted_sorter", lambda s, v: ember.searchsorted(s, v, sorter=ember.argsort(s)),
      lambda s, v: np.searchsorted(s, v, sorter=np.argsort(s, kind="stable")), [(8,), (5,)], dtypes=F),
    C("searchsorted_nd", lambda s, v: ember.searchsorted(ember.sort(s, -1).values, v),
      lambda s, v: np.stack([np.searchsorted(r, q) for r, q in zip(np.sort(s, -1), v)]), [(3, 6), (3, 4)],
      dtypes=F + I),
    C("bucketize", lambda v, b: ember.bucketize(v, ember.sort(b).values), lambda v, b: np.searchsorted(np.sort(b), v),
      [(2, 5), (6,)], dtypes=F + I),
    C("bucketize_right", lambda v, b: ember.bucketize(v, ember.sort(b).values, right=True),
      lambda v, b: np.searchsorted(np.sort(b), v, side="right"), [(2, 5), (6,)], dtypes=F),
    C("histc", lambda x: ember.histc(x, bins=5, min=-2, max=2), lambda x: _histc(x, 5, -2, 2), [(40,)], dtypes=F),
    C("histc_data_range", lambda x: ember.histc(x, bins=4), lambda x: _histc(x, 4, x.min(), x.max()), [(30,)],
      dtypes=F),
    C("bincount", lambda x: ember.bincount(x, minlength=12), lambda x: np.bincount(x, minlength=12),
      [dict(shape=(20,), low=0, high=10)], dtypes=INTS),
    C("bincount_weights", lambda x, w: ember.bincount(x, w), lambda x, w: np.bincount(x, w),
      [dict(shape=(20,), low=0, high=6, dtype=ember.int64), (20,)], dtypes=F),
    # advanced indexing (get and set)
    C("getitem_list_neg", lambda x: x[[-1, 0, -3]], lambda x: x[[-1, 0, -3]], [S], dtypes=ALL, grad=True),
    C("getitem_nested_list", lambda x: x[[[0, 1], [1, 2]]], lambda x: x[[0, 1], [1, 2]], [S], dtypes=F, grad=True),
    C("getitem_adv_noncontiguous_dims", lambda x: x[L(x, [0, 1]), :, L(x, [3, -1])], lambda x: x[[0, 1], :, [3, 3]],
      [S3], dtypes=F + I, grad=True),
    C("getitem_adv_middle", lambda x: x[:, L(x, [[0, 2]]), 1:], lambda x: x[:, [[0, 2]], 1:], [S3], dtypes=F,
      grad=True),
    C("getitem_bool_rows", lambda x: x[L(x, [1, 0, 1]) > 0], lambda x: x[[True, False, True]], [S], dtypes=ALL,
      grad=True),
    C("getitem_mask_and_index", lambda x: x[L(x, [1, 0, 1]) > 0, L(x, [3, 1])],
      lambda x: x[[True, False, True], [3, 1]], [S], dtypes=F, grad=True),
    C("getitem_ellipsis_none", lambda x: x[..., None, L(x, [0, -1])], lambda x: x[..., None, [0, -1]], [S3], dtypes=F,
      grad=True),
    C("getitem_empty_list", lambda x: x[[]], lambda x: x[np.array([], dtype=np.int64)], [S], dtypes=F),
    C("setitem_adv", lambda x, v: _set(x, (L(x, [0, 2]), L(x, [1, -1])), v),
      lambda x, v: _setitem(x, ([0, 2], [1, 3]), v), [S, (2,)], dtypes=ALL, grad=True),
    C("setitem_mask_scalar", lambda x: _set(x, x > 0, 0), lambda x: np.where(x > 0, 0, x), [S], dtypes=F16 + INTS[1:]),
    C("setitem_mask_tensor", lambda x, v: _set(x, x > 0, v[: int((x > 0).sum().item())]),
      lambda x, v: _setitem(x, x > 0, v[: int((x > 0).sum())]), [S, (12,)], dtypes=F, grad=True),
    C("setitem_slice_broadcast", lambda x, v: _set(x, (slice(None), slice(1, 3)), v),
      lambda x, v: _setitem(x, (slice(None), slice(1, 3)), v), [S, (2,)], dtypes=ALL, grad=True),
    C("setitem_rows_broadcast", lambda x, v: _set(x, L(x, [2, 0]), v), lambda x, v: _setitem(x, [2, 0], v), [S, (4,)],
      dtypes=F + I, grad=True),
]


def _put(x, idx, src, accumulate):
    out = np.array(x, copy=True).reshape(-1)
    idx = np.array(idx) % out.size
    if accumulate:
        np.add.at(out, idx, src)
    else:
        out[idx] = src
    return out.reshape(np.shape(x))


def _set(x, key, value):
    """``x[key] = value`` on a copy (differentiable through the copy)."""
    y = x.clone()
    y[key] = value
    return y

