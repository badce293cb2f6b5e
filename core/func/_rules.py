"""vmap's batching rules: each runs one op on the whole batch (the values, batch dim first).

A rule gets ``(op, front, level, args, kwargs)`` with the level-``level`` batched tensors still
wrapped, and returns the result (wrapped) or ``NotImplemented`` (the handler then loops over the
examples). Logical dim ``d`` of an ``n``-dim example is physical dim ``d % n + 1``.
Composite ops need no rule: the handler runs their body, whose ops are batched one by one.
"""
from __future__ import annotations

import inspect

from .. import ops
from .._tensor import Tensor
from ..ops.registry import OPS
from . import _batched as BT
from ._batched import F_RULES, RULES, is_batched_at, unwrap_at, wrap

__all__ = ["install"]

_SIGS: dict = {}


def _bind(front, args, kwargs):
    sig = _SIGS.get(front)
    if sig is None:
        sig = _SIGS[front] = inspect.signature(front)
    b = sig.bind(*args, **kwargs)
    return b


def _ndim(x, level):
    return len(x._shape) if isinstance(x, Tensor) else 0


def _pdim(d, n, op="") -> int:
    """Physical dim of logical dim ``d`` of an ``n``-dim example."""
    m = max(n, 1)
    if not -m <= d < m:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-m}, {m - 1}], but got {d})")
    return d % m + 1


def _pad(v, k):
    """``v`` (batch first) with ``k`` size-1 dims after the batch dim."""
    for _ in range(k):
        v = ops.unsqueeze(v, 1)
    return v


def _expand(x, n):
    """An unbatched tensor repeated ``n`` times along a new first dim (a view)."""
    return ops.expand(ops.unsqueeze(x, 0), n, *x.shape)


def _rewrap(r, level):
    if isinstance(r, Tensor):
        return wrap(r, level)
    if isinstance(r, tuple):
        vals = [wrap(o, level) if isinstance(o, Tensor) else o for o in r]
        return type(r)(vals) if type(r) is tuple else type(r)(*vals)
    if isinstance(r, list):
        return [wrap(o, level) if isinstance(o, Tensor) else o for o in r]
    return r


# -- elementwise ops: pad every batched operand to the result's rank -----------------------------

def elementwise(op, front, level, args, kwargs):
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
    r = max(_ndim(t, level) for t in tensors)

    def conv(a):
        if is_batched_at(a, level):
            return _pad(a._value, r - len(a._shape))
        return a
    inplace = front is op.inplace_fn
    if inplace and not is_batched_at(args[0], level):
        raise RuntimeError(f"vmap: {op.name}_(self, *extra_args) is not possible because there exists a Tensor "
                           "`other` in extra_args that has more elements than `self`. This happened due to `other` "
                           "being vmapped over but `self` not being vmapped over in a vmap. Please try to use "
                           f"out-of-place operators instead of {op.name}_.")
    res = front(*[conv(a) for a in args], **{k: conv(v) for k, v in kwargs.items()})
    return args[0] if inplace else _rewrap(res, level)


# -- ops with dim arguments on one batched tensor ------------------------------------------------

#: op -> (dim parameter names, what dim=None means: "all" (a tuple of every dim), "flat", or None)
DIM_OPS = {
    "sum": (("dim",), "all"), "mean": (("dim",), "all"), "nansum": (("dim",), "all"), "nanmean": (("dim",), "all"),
    "amax": (("dim",), "all"), "amin": (("dim",), "all"), "std": (("dim",), "all"), "var": (("dim",), "all"),
    "std_mean": (("dim",), "all"), "var_mean": (("dim",), "all"), "prod": (("dim",), "flat"),
    "argmax": (("dim",), "flat"), "argmin": (("dim",), "flat"), "logsumexp": (("dim",), None),
    "count_nonzero": (("dim",), "all"), "max_dim": (("dim",), None), "min_dim": (("dim",), None),
    "cumsum": (("dim",), None), "cumprod": (("dim",), None), "logcumsumexp": (("dim",), None),
    "cummax": (("dim",), None), "cummin": (("dim",), None), "softmax": (("dim",), None),
    "log_softmax": (("dim",), None), "sort": (("dim",), None), "argsort": (("dim",), None),
    "topk": (("dim",), None), "kthvalue": (("dim",), None), "median_dim": (("dim",), None),
    "transpose": (("dim0", "dim1"), None), "select": (("dim",), None), "narrow": (("dim",), None),
    "unsqueeze": (("dim",), None), "squeeze": (("dim",), "squeeze"), "flip": (("dims",), None),
    "diagonal": (("dim1", "dim2"), None), "index_select": (("dim",), None), "cat": (("dim",), None),
    "split_with_sizes": (("dim",), None), "diff": (("dim",), None), "cumulative_trapezoid": (("dim",), None),
    "norm_dim": (("dim",), "all"), "vector_norm": (("dim",), "all"), "all_dim": (("dim",), None),
    "any_dim": (("dim",), None), "renorm": (("dim",), None), "glu": (("dim",), None), "all": (("dim",), "flat"),
    "any": (("dim",), "flat"), "slice": (("dim",), None), "unfold": (("dimension",), None),
    "mode": (("dim",), None), "norm": (("dim",), "all"),
}


def max_min_rule(op, front, level, args, kwargs):
    """``max``/``min``: elementwise with ``other``, a reduction over every dim, or one dim's
    ``(values, indices)``."""
    b = _bind(front, args, kwargs)
    a = b.arguments
    x, dim, other = a["input"], a.get("dim"), a.get("other")
    if isinstance(dim, Tensor) or other is not None:
        return elementwise(op, front, level, (x, dim if other is None else other), {})
    if a.get("out") is not None or not is_batched_at(x, level):
        return NotImplemented
    v = x._value
    if dim is None:
        return wrap(front(ops.reshape(v, v.shape[0], -1), 1)[0], level)
    return _rewrap(front(v, _pdim(dim, len(x._shape)), a.get("keepdim", False)), level)


def gather_rule(op, front, level, args, kwargs):
    b = _bind(front, args, kwargs)
    a = b.arguments
    x, idx = a["input"], a["index"]
    if a.get("out") is not None:
        return NotImplemented
    n = BT.batch_size(level)
    xv = x._value if is_batched_at(x, level) else _expand(x, n)
    iv = idx._value if is_batched_at(idx, level) else _expand(idx, n)
    return wrap(front(xv, _pdim(a["dim"], len(x._shape)), iv), level)


def _map_dims(d, n, unsqueeze=False):
    if isinstance(d, (tuple, list)):
        return type(d)(_map_dims(x, n, unsqueeze) for x in d)
    return _pdim(d, n + 1 if unsqueeze else n)


def dim_op(op, front, level, args, kwargs):
    names, none = DIM_OPS[op.name]
    b = _bind(front, args, kwargs)
    a = b.arguments
    first = next(iter(a))
    x = a[first]
    others = [v for k, v in a.items() if k != first]
    if not is_batched_at(x, level) or any(BT.top_level((v,), {}) == level for v in others):
        return NotImplemented
    n = len(x._shape)
    v = x._value
    for nm in names:
        if nm not in a:
            if none is None:
                continue
            a[nm] = None
        d = a[nm]
        if d is None or (d == () and none == "all"):
            if none == "all":
                a[nm] = tuple(range(1, n + 1)) if n else ()
                if not n:
                    return NotImplemented
            elif none == "flat":
                if a.get("keepdim"):
                    return NotImplemented
                v = ops.reshape(v, v.shape[0], -1)
                a[nm] = 1
            elif none == "squeeze":
                a[nm] = tuple(i + 1 for i, s in enumerate(x._shape) if s == 1)
            else:
                return NotImplemented
        else:
            a[nm] = _map_dims(d, n, op.name == "unsqueeze")
    a[first] = v
    return _rewrap(front(*b.args, **b.kwargs), level)


def cat_rule(op, front, level, args, kwargs):
    b = _bind(front, args, kwargs)
    ts = list(b.arguments["tensors"])
    n = BT.batch_size(level)
    ref = next(t for t in ts if is_batched_at(t, level))
    nd = len(ref._shape)
    vals = [t._value if is_batched_at(t, level) else _expand(t, n) for t in ts]
    d = b.arguments.get("dim", 0)
    if b.arguments.get("out") is not None:
        return NotImplemented
    return wrap(front(vals, _pdim(d, nd)), level)


# -- views and shape ops -------------------------------------------------------------------------

def _sizes(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)) or len(shape) == 1 and hasattr(shape[0], "__len__"):
        return tuple(shape[0])
    return tuple(shape)


def reshape_rule(op, front, level, args, kwargs):
    x, *shape = args
    if kwargs or not is_batched_at(x, level):
        return NotImplemented
    v = x._value
    return wrap(front(v, v.shape[0], *_sizes(shape)), level)


def expand_rule(op, front, level, args, kwargs):
    x, *sizes = args
    if kwargs or not is_batched_at(x, level):
        return NotImplemented
    sizes = _sizes(sizes)
    v = _pad(x._value, len(sizes) - len(x._shape))
    return wrap(front(v, v.shape[0], *sizes), level)


def permute_rule(op, front, level, args, kwargs):
    x, *dims = args
    if kwargs or not is_batched_at(x, level):
        return NotImplemented
    n = len(x._shape)
    return wrap(front(x._value, 0, *[_pdim(d, n) for d in _sizes(dims)]), level)


def getitem(op, front, level, args, kwargs):
    """``x[key]`` (``Tensor.__getitem__`` is no declared op: BatchedTensor's own calls this)."""
    x, key = args
    if not is_batched_at(x, level):
        return NotImplemented
    key = key if isinstance(key, tuple) else (key,)
    tens = [i for i, k in enumerate(key) if isinstance(k, Tensor) or isinstance(k, (list,))]
    if any(is_batched_at(k, level) for k in key):
        return NotImplemented
    if tens and tens != list(range(tens[0], tens[-1] + 1)):
        return NotImplemented  # separated advanced indices move to the front
    return wrap(front(x._value, (slice(None),) + key), level)


def setitem(op, front, level, args, kwargs):
    x, key, value = args
    if not is_batched_at(x, level):
        raise RuntimeError("vmap: index_put_(self, *extra_args) is not possible because there exists a Tensor "
                           "`other` in extra_args that has more elements than `self`.")
    key = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, (Tensor, list)) for k in key):
        return NotImplemented
    if is_batched_at(value, level):
        view = ops.indexing.getitem(x._value, (slice(None),) + key)
        value = _pad(value._value, view.dim() - 1 - len(value._shape))
    front(x._value, (slice(None),) + key, value)
    return None


def _bt_getitem(self, key):
    if BT._vm.depth == 0:
        raise RuntimeError("vmap: a batched tensor was used outside of its vmap")
    r = getitem(None, ops.indexing.getitem, self._level, (self, key), {})
    if r is NotImplemented:
        return BT._loop("getitem", ops.indexing.getitem, self._level, (self, key), {})
    return r


def _bt_setitem(self, key, value):
    r = setitem(None, ops.indexing.setitem, self._level, (self, key, value), {})
    if r is NotImplemented:
        BT._loop("setitem_", ops.indexing.setitem, self._level, (self, key, value), {})


# -- matmul family -------------------------------------------------------------------------------

def matmul_rule(op, front, level, args, kwargs):
    if kwargs.get("out") is not None:
        return NotImplemented
    a, b = args[0], args[1]
    ab, bb = is_batched_at(a, level), is_batched_at(b, level)
    la, lb = len(a._shape), len(b._shape)
    if la == 0 or lb == 0:
        return NotImplemented
    av = a._value if ab else a
    bv = b._value if bb else b
    if la == 1:
        av = ops.unsqueeze(av, -2)
    if lb == 1:
        bv = ops.unsqueeze(bv, -1)
    r = max(la, lb, 2)
    if ab:
        av = _pad(av, r - max(la, 2))
    if bb:
        bv = _pad(bv, r - max(lb, 2))
    out = front(av, bv)  # the batch dim broadcasts against the unbatched operand's leading dims
    if lb == 1:
        out = ops.squeeze(out, -1)
    if la == 1:
        out = ops.squeeze(out, -1 if lb == 1 else -2)
    return wrap(out, level)


def linear_rule(op, front, level, args, kwargs):
    x, w, b = args
    if is_batched_at(x, level) and not is_batched_at(w, level) and not is_batched_at(b, level):
        return wrap(front(x._value, w, b), level)
    out = ops.matmul(x, w.t() if w.dim() == 2 else w)
    return out if b is None else out + b


def layer_norm_rule(op, front, level, args, kwargs):
    x, w, b, k, eps = args
    if not is_batched_at(x, level):
        return NotImplemented
    if is_batched_at(w, level) or is_batched_at(b, level):
        y = wrap(front(x._value, None, None, k, eps)[0], level)
        if w is not None:
            y = y * w
        if b is not None:
            y = y + b
        return (y, None, None)
    res = front(x._value, w, b, k, eps)
    return _rewrap(tuple(res), level)


def convolution_rule(op, front, level, args, kwargs):
    x, w, b, stride, padding, dilation, groups = args
    if is_batched_at(w, level) or is_batched_at(b, level):
        return _conv_batched_weight(front, level, x, w, b, stride, padding, dilation, groups)
    if not is_batched_at(x, level):
        return NotImplemented
    v = x._value
    B, N = v.shape[0], v.shape[1]
    out = front(ops.reshape(v, B * N, *v.shape[2:]), w, b, stride, padding, dilation, groups)
    return wrap(ops.reshape(out, B, N, *out.shape[1:]), level)


def _conv_batched_weight(front, level, x, w, b, stride, padding, dilation, groups):
    n = BT.batch_size(level)
    xv = x._value if is_batched_at(x, level) else _expand(x, n)          # (B, N, C, *sp)
    wv = w._value if is_batched_at(w, level) else _expand(w, n)          # (B, O, C/g, *k)
    N, C, sp = xv.shape[1], xv.shape[2], tuple(xv.shape[3:])
    O = wv.shape[1]
    xf = ops.reshape(ops.movedim(xv, 0, 1), N, n * C, *sp)               # (N, B*C, *sp)
    wf = ops.reshape(wv, n * O, *wv.shape[2:])
    bf = None
    if b is not None:
        bf = ops.reshape(b._value if is_batched_at(b, level) else _expand(b, n), n * O)
    out = front(xf, wf, bf, stride, padding, dilation, groups * n)         # (N, B*O, *sp')
    out = ops.reshape(out, N, n, O, *out.shape[2:])
    return wrap(ops.movedim(out, 1, 0), level)


def fold_rule(op, front, level, args, kwargs):
    """An op whose first argument is ``(N, C, *spatial)`` (pooling): the batch folds into N."""
    x, *rest = args
    if not is_batched_at(x, level) or kwargs or any(isinstance(a, Tensor) for a in rest) or len(x._shape) < 2:
        return NotImplemented
    v = x._value
    B, N = v.shape[0], v.shape[1]
    out = front(ops.reshape(v, B * N, *v.shape[2:]), *rest)

    def unfold(o):
        return wrap(ops.reshape(o, B, N, *o.shape[1:]), level) if isinstance(o, Tensor) else o
    return tuple(unfold(o) for o in out) if isinstance(out, tuple) else unfold(out)


def pad_rule(op, front, level, args, kwargs):
    b = _bind(front, args, kwargs).arguments
    x, pad = b["x"], b["pad"]
    if not is_batched_at(x, level) or len(pad) // 2 > len(x._shape):
        return NotImplemented
    return wrap(front(x._value, pad, b.get("value", 0.0)), level)


def embedding_rule(op, front, level, args, kwargs):
    w, idx, padding_idx = args
    if is_batched_at(w, level) or not is_batched_at(idx, level):
        return NotImplemented
    return wrap(front(w, idx._value, padding_idx), level)


# -- nn.functional rules -------------------------------------------------------------------------

def _cross_entropy(fn, level, args, kwargs):
    b = _bind(fn, args, kwargs)
    a = b.arguments
    x, t = a["input"], a["target"]
    w = a.get("weight")
    if is_batched_at(w, level) or a.get("size_average") is not None or a.get("reduce") is not None:
        return NotImplemented
    n = BT.batch_size(level)
    xv = x._value if is_batched_at(x, level) else _expand(x, n)
    tv = t._value if is_batched_at(t, level) else _expand(t, n)
    red = a.get("reduction", "mean")
    xf = ops.reshape(xv, n * xv.shape[1], *xv.shape[2:]) if x.dim() > 1 else xv
    tf = ops.reshape(tv, n * tv.shape[1], *tv.shape[2:]) if x.dim() > 1 else tv
    a["input"], a["target"], a["reduction"] = xf, tf, "none"
    loss = fn(*b.args, **b.kwargs)
    loss = ops.reshape(loss, n, x.shape[0], *x.shape[2:]) if x.dim() > 1 else loss
    dims = tuple(range(1, loss.dim()))
    if red == "none":
        return wrap(loss, level)
    total = ops.sum(loss, dims) if dims else loss
    if red == "sum":
        return wrap(total, level)
    if t.dtype.is_floating_point:
        C = x.shape[1 if x.dim() > 1 else 0]
        return wrap(total / (x.numel() // C if C else 0), level)
    keep = tv != a.get("ignore_index", -100)
    wt = keep.to(xv.dtype)
    if w is not None:
        wt = wt * ops.index_select(w, 0, ops.reshape(ops.where(keep, tv, 0), -1)).reshape(tv.shape)
    denom = ops.sum(wt, dims) if dims else wt
    return wrap(total / denom, level)


# -- randomness ----------------------------------------------------------------------------------

def _suspending(fn):
    def run(*a, **k):
        with BT.suspended():
            return fn(*a, **k)
    return run


_DROPOUTS = {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"}


def random_rule(name, front, level, args, kwargs):
    """The random functions under vmap's ``randomness``: 'error' refuses them; 'different' draws
    for every example (a batched input is drawn for as a whole; a factory once per example of the
    innermost vmap); 'same' draws for one example and broadcasts it."""
    if name in _DROPOUTS:
        a = _bind(front, args, kwargs).arguments
        if not a.get("training", name.startswith("dropout")) or a.get("p", 0.5) == 0:
            return NotImplemented
    inner_level, inner_n, inner_mode = BT._vm.levels[-1]
    mode = BT.randomness(level) if level else inner_mode
    if mode == "error":
        raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the "
                           "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
                           "of vmap")
    inplace = name.endswith("_")
    if level == 0:
        if mode == "same" or inplace:
            return NotImplemented
        with BT.suspended():
            outs = [front(*args, **kwargs) for _ in range(inner_n)]
        return wrap(ops.stack(outs, 0), inner_level)
    x = args[0]
    if not is_batched_at(x, level):
        return NotImplemented
    rest = [unwrap_at(a, level) for a in args[1:]]
    kw = {k: unwrap_at(v, level) for k, v in kwargs.items()}
    v = x._value
    if BT.top_level((v, rest), kw) == 0:
        front = _suspending(front)  # the function's own random calls must not be batched again
    if mode == "different":
        r = front(v, *rest, **kw)
        return x if inplace else wrap(r, level)
    first = ops.clone(ops.select(v, 0, 0))
    if inplace:
        front(first, *rest, **kw)
        ops.copy_(v, _expand(first, v.shape[0]))
        return x
    if name in _DROPOUTS:
        mask = front(ops.ones_like(first), *rest, **kw)
        return wrap(v * mask, level)
    return wrap(_expand(front(first, *rest, **kw), v.shape[0]), level)


def _f_embedding(fn, level, args, kwargs):
    b = _bind(fn, args, kwargs)
    a = b.arguments
    if not is_batched_at(a["input"], level) or is_batched_at(a["weight"], level) or a.get("max_norm") is not None:
        return NotImplemented
    a["input"] = a["input"]._value
    return wrap(fn(*b.args, **b.kwargs), level)


def _pointwise_loss(fn, level, args, kwargs):
    """A loss that is elementwise before its reduction: run with ``reduction='none'`` on the
    batch, then reduce each example."""
    b = _bind(fn, args, kwargs)
    a = b.arguments
    if a.get("size_average") is not None or a.get("reduce") is not None:
        return NotImplemented
    n = BT.batch_size(level)
    names = [k for k, v in a.items() if isinstance(v, Tensor)]
    rank = max(len(a[k]._shape) for k in names)
    for k in names:
        v = a[k]
        v = v._value if is_batched_at(v, level) else _expand(v, n)
        a[k] = _pad(v, rank - (v.dim() - 1))
    red = a.get("reduction", "mean")
    a["reduction"] = "none"
    loss = fn(*b.args, **b.kwargs)
    if red == "none":
        return wrap(loss, level)
    dims = tuple(range(1, loss.dim()))
    if not dims:
        return wrap(loss, level)
    return wrap(ops.mean(loss, dims) if red == "mean" else ops.sum(loss, dims), level)


def _function_loop(fn, level, args, kwargs):
    """A custom ``autograd.Function`` has no batching rule: it runs once per example (its
    forward and backward see one example, as PyTorch's without a ``vmap`` staticmethod would
    need ``generate_vmap_rule``)."""
    return BT._loop("autograd.Function", fn, level, args, kwargs)


def install() -> None:
    """Fill :data:`ember.func._batched.RULES` from the op registry."""
    for name, op in OPS.items():
        if op.fn is None or op.composite:
            continue
        if op.result == "elementwise" or op.group in ("unary", "binary", "ternary"):
            RULES[name] = RULES[name + "_"] = elementwise
    for name in ("clone", "detach", "nan_to_num", "threshold_backward", "fill_", "copy_", "binary_cross_entropy"):
        if name in OPS:
            RULES[name] = elementwise
    for name in DIM_OPS:
        if name in OPS:
            RULES[name] = dim_op
    RULES.update({"cat": cat_rule, "view": reshape_rule, "reshape": reshape_rule, "expand": expand_rule,
                  "permute": permute_rule, "max": max_min_rule, "min": max_min_rule, "gather": gather_rule,
                  "matmul": matmul_rule, "linear": linear_rule, "layer_norm": layer_norm_rule,
                  "convolution": convolution_rule, "__random__": random_rule, "max_pool": fold_rule,
                  "avg_pool": fold_rule, "constant_pad_nd": pad_rule, "embedding": embedding_rule})
    F_RULES["cross_entropy"] = _cross_entropy
    F_RULES["embedding"] = _f_embedding
    F_RULES["autograd.Function"] = _function_loop
    for name in ("binary_cross_entropy", "binary_cross_entropy_with_logits", "l1_loss", "smooth_l1_loss",
                 "huber_loss", "mse_loss", "soft_margin_loss"):
        F_RULES[name] = _pointwise_loss
    BT.BatchedTensor.__getitem__ = _bt_getitem
    BT.BatchedTensor.__setitem__ = _bt_setitem


install()
