"""``ember.func.vmap``: a function of one example mapped over a batch by batching rules."""
from __future__ import annotations

import functools

from .. import _state, ops
from .._tensor import Tensor
from . import _batched as BT
from . import _rules  # noqa: F401  (fills the rule tables)
from ._tree import broadcast_prefix, flatten, unflatten

__all__ = ["vmap"]

_vm = _state.vmap
type(_vm).call = staticmethod(BT.handle)


def _name(func) -> str:
    return getattr(func, "__name__", None) or type(func).__name__


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """``func`` mapped over dim ``in_dims`` of its inputs (nested tuples/dicts follow the inputs'
    structure; None: not mapped), its outputs stacked along ``out_dims``. Ops are applied to the
    whole batch by their batching rules (see docs/func.md); ``randomness`` is 'error',
    'different' or 'same'; ``chunk_size`` runs the batch in chunks of that many examples."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)
    return wrapped


def _check_in_dims(func, in_dims, args):
    where = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                         "trying to vmap over a function with no inputs. The latter is unsupported.")
    if isinstance(in_dims, tuple) and len(in_dims) != len(args):
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. in_dims has "
                         f"{len(in_dims)} entries but there are {len(args)} inputs.")
    leaves, spec = flatten(args)
    try:
        dims = broadcast_prefix(in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args), args, "in_dims")
    except ValueError:
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`.") from None
    size = None
    for x, d in zip(leaves, dims):
        if d is None:
            continue
        if not isinstance(d, int):
            raise ValueError(f"{where}: in_dim {d!r} is not an int or None")
        if not isinstance(x, Tensor):
            raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of type {type(x)}. We cannot "
                             "vmap over non-Tensor arguments, please use None as the respective in_dim")
        n = x.dim()
        if not -n <= d < n:
            raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is a Tensor of dimensionality "
                             f"{n} so expected in_dim to satisfy {-n} <= in_dim < {n}.")
        s = x.shape[d]
        if size is not None and s != size[0]:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{[size[0], s]} for the mapped dimension")
        size = (s,)
    if size is None:
        raise ValueError(f"{where}: Got in_dims={in_dims} for all inputs, but at least one input must be batched "
                         "(in_dim not None).")
    return leaves, spec, dims, size[0]


def _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs):
    leaves, spec, dims, n = _check_in_dims(func, in_dims, args)
    if chunk_size is not None and chunk_size < n:
        parts = []
        for start in range(0, n, chunk_size):
            m = min(chunk_size, n - start)
            sub = [ops.narrow(x, d, start, m) if d is not None else x for x, d in zip(leaves, dims)]
            parts.append(_run(func, unflatten(sub, spec), dims, out_dims, randomness, kwargs, m))
        flat0, ospec = flatten(parts[0])
        odims = _out_dims(func, out_dims, parts[0])
        cols = [[flatten(p)[0][i] for p in parts] for i in range(len(flat0))]
        outs = [c[0] if d is None else ops.cat(c, d) for c, d in zip(cols, odims)]
        return unflatten(outs, ospec)
    return _run(func, args, dims, out_dims, randomness, kwargs, n)


def _out_dims(func, out_dims, out):
    if not isinstance(out_dims, (int, tuple)) and out_dims is not None:
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): expected `out_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of outputs, got: {type(out_dims)}.")
    try:
        return broadcast_prefix(out_dims, out, "out_dims")
    except ValueError:
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with "
                         "the structure of `outputs`.") from None


def _run(func, args, dims, out_dims, randomness, kwargs, n):
    level = len(_vm.levels) + 1
    leaves, spec = flatten(args)
    batched = [BT.wrap(ops.movedim(x, d, 0), level) if d is not None else x for x, d in zip(leaves, dims)]
    _state.enter_vmap((level, n, randomness))
    try:
        out = func(*unflatten(batched, spec), **kwargs)
        flat, ospec = flatten(out)
        odims = _out_dims(func, out_dims, out)
        res = []
        for o, d in zip(flat, odims):
            if not isinstance(o, Tensor):
                if d is None:
                    res.append(o)
                    continue
                raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return Tensors, got type "
                                 f"{type(o)}. Did you mean to set out_dims= to None for output?")
            if BT.is_batched_at(o, level):
                if d is None:
                    raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` can not return a BatchedTensor when "
                                     "out_dim is None")
                v = o._value
                res.append(ops.movedim(v, 0, d % v.dim()))
            elif d is None:
                res.append(o)
            else:
                e = ops.expand(ops.unsqueeze(o, 0), n, *o.shape)
                res.append(ops.movedim(e, 0, d % e.dim()))
    finally:
        _state.exit_vmap()
    return unflatten(res, ospec)
