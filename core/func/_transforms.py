"""``ember.func``'s autodiff transforms on ember's tape-based autograd.

Each call of a transformed function makes *fresh tracked inputs*: a detached leaf that requires
grad, or, when the input already takes part in an enclosing graph (a surrounding ``grad``), an
alias of it (so the enclosing transform can differentiate through). The function runs, and the
tape is walked by :func:`ember.autograd.grad`, with ``create_graph=True`` when an enclosing
graph exists (so transforms nest: ``grad(grad(f))``). Inside :func:`ember.func.vmap` the tracked
inputs are physical tensors holding every running vmap's batch dims (an unbatched input is
broadcast first), so that one backward pass gives the per-example gradients.
Forward mode (``jvp``, ``jacfwd``) is the double-vjp trick: ember has no dual numbers.
"""
from __future__ import annotations

import functools

from .. import _state, autograd, ops
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad
from ._levels import active_levels, from_levels, with_levels
from ._tree import flatten, tree_map, unflatten
from ._vmap import vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian"]

_vm = _state.vmap


class _Tracked:
    """The tracked inputs of one transform call."""

    def __init__(self, leaves):
        self.ctx = active_levels()
        self.nested = False
        self.phys, self.logical = [], []
        for x in leaves:
            if not isinstance(x, Tensor):
                raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
            p = with_levels(x, self.ctx)
            if p.requires_grad and _state.grad.enabled:
                self.nested = True
                p = ops.view_as(p, p)
            else:
                p = p.detach().requires_grad_(True)
            self.phys.append(p)
            self.logical.append(from_levels(p, self.ctx))

    def physical(self, out):
        return with_levels(out, self.ctx)

    def grads(self, outs, cots, retain=True):
        outs = [self.physical(o) for o in outs]
        pairs = [(o, c) for o, c in zip(outs, cots) if o.requires_grad]
        if not pairs:
            return [ops.zeros_like(p) for p in self.phys]
        gs = autograd.grad([o for o, _ in pairs], self.phys, [c for _, c in pairs], retain_graph=retain,
                           create_graph=self.nested, allow_unused=True)
        return [ops.zeros_like(p) if g is None else g for g, p in zip(gs, self.phys)]

    def out(self, g):
        return from_levels(g, self.ctx)


def _argnums(argnums, args):
    if isinstance(argnums, int):
        if not -len(args) <= argnums < len(args):
            raise RuntimeError(f"Got argnum={argnums}, but only {len(args)} positional inputs")
        return argnums % len(args)
    if isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        return tuple(_argnums(a, args) for a in argnums)
    raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")


def _split(args, argnums):
    idx = _argnums(argnums, args)
    diff = args[idx] if isinstance(idx, int) else tuple(args[i] for i in idx)
    return idx, diff


def _replace(args, idx, new):
    args = list(args)
    if isinstance(idx, int):
        args[idx] = new
    else:
        for i, v in zip(idx, new):
            args[i] = v
    return tuple(args)


def _detach_out(x, nested):
    return x if nested or not isinstance(x, Tensor) else x.detach()


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """``func``'s gradient with respect to its ``argnums`` inputs, and its value: ``(grad, value)``
    (``(grad, (value, aux))`` with ``has_aux``)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        idx, diff = _split(args, argnums)
        with enable_grad():
            leaves, spec = flatten(diff)
            tr = _Tracked(leaves)
            out = func(*_replace(args, idx, unflatten(tr.logical, spec)), **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: "
                                       "(output, aux) if has_aux is True")
                out, aux = out
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                                   f"with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
            po = tr.physical(out)
            gs = tr.grads([out], [ops.ones_like(po)])
            g = unflatten([tr.out(x) for x in gs], spec)
        value = _detach_out(out, tr.nested)
        if has_aux:
            return g, (value, tree_map(lambda a: _detach_out(a, tr.nested), aux))
        return g, value
    return wrapper


def grad(func, argnums=0, has_aux: bool = False):
    """``func``'s gradient with respect to its ``argnums`` inputs (``(grad, aux)`` with
    ``has_aux``); ``func`` returns a one-element (0-d) tensor."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, v = gv(*args, **kwargs)
        return (g, v[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)`` (plus ``aux``); ``vjp_fn(cotangents)`` returns one gradient per
    primal. ``vjp_fn`` may be called several times, and under :func:`vmap` (batched cotangents:
    the backward formulas then run on batched tensors)."""
    with enable_grad():
        leaves, spec = flatten(primals)
        tr = _Tracked(leaves)
        out = func(*unflatten(tr.logical, spec))
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: (output, aux) if "
                                   "has_aux is True")
            out, aux = out
    oleaves, ospec = flatten(out)
    for o in oleaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has non-empty output but got "
                               f"output of type {type(o)}" if o is None else
                               f"vjp(f, *primals): expected f(*primals) to return only tensors, got unsupported type "
                               f"{type(o)}")

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        cl, cspec = flatten(cotangents)
        if len(cl) != len(oleaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {cspec}, primal output: {ospec}")
        cots = []
        for o, c in zip(oleaves, cl):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {list(c.shape)} and output[0] "
                                   f"has a shape of {list(o.shape)}.")
            cots.append(with_levels(c, tr.ctx))
        with enable_grad():
            gs = tr.grads(oleaves, cots)
        return unflatten([tr.out(g) for g in gs], spec)
    value = tree_map(lambda a: _detach_out(a, tr.nested), out)
    if has_aux:
        return value, vjp_fn, tree_map(lambda a: _detach_out(a, tr.nested), aux)
    return value, vjp_fn


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J @ tangents)``, by the double-vjp trick: the vjp with a placeholder
    cotangent ``u`` is linear in ``u``, and its vjp with ``tangents`` is the jvp."""
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    if not isinstance(tangents, tuple) or len(tangents) != len(primals):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, tangents also must be.")
    pl, pspec = flatten(primals)
    tl, _ = flatten(tangents)
    for p, t in zip(pl, tl):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same shape")
    with enable_grad():
        tr = _Tracked(pl)
        out = func(*unflatten(tr.logical, pspec))
        aux = None
        if has_aux:
            out, aux = out
        oleaves, ospec = flatten(out)
        pos = [tr.physical(o) for o in oleaves]
        us = [ops.zeros_like(o).requires_grad_(True) for o in pos]
        pairs = [(o, u) for o, u in zip(pos, us) if o.requires_grad]
        tl_phys = [with_levels(t, tr.ctx) for t in tl]
        if pairs:
            gs = autograd.grad([o for o, _ in pairs], tr.phys, [u for _, u in pairs], create_graph=True,
                               allow_unused=True)
            keep = [(g, t) for g, t in zip(gs, tl_phys) if g is not None and g.requires_grad]
        else:
            keep = []
        if keep:
            jv = autograd.grad([g for g, _ in keep], [u for _, u in pairs], [t for _, t in keep],
                               create_graph=tr.nested, allow_unused=True)
            jmap = {id(u): j for (_, u), j in zip(pairs, jv)}
        else:
            jmap = {}
        tans = [jmap.get(id(u)) for u in us]
        tans = [ops.zeros_like(o) if j is None else j for j, o in zip(tans, pos)]
    outv = unflatten([_detach_out(o, tr.nested) for o in oleaves], ospec)
    tanv = unflatten([tr.out(_detach_out(j, tr.nested)) for j in tans], ospec)
    if has_aux:
        return outv, tanv, aux
    return outv, tanv


def _basis(x):
    n = x.numel()
    return ops.reshape(ops.eye(n, dtype=x.dtype, device=x.device), n, *x.shape)


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to its ``argnums`` inputs, by reverse mode: one vjp,
    then ``vmap`` of ``vjp_fn`` over the rows of the identity (batched cotangents through the
    backward formulas). Result shape: ``output.shape + input.shape`` (nested per output and input)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        idx, diff = _split(args, argnums)
        dl, dspec = flatten(diff)

        def f(*d):
            return func(*_replace(args, idx, unflatten(list(d), dspec)), **kwargs)
        res = vjp(f, *dl, has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        ol, ospec = flatten(out)
        rows = []
        for k, o in enumerate(ol):
            def one(e, k=k):
                cots = [e if j == k else ops.zeros_like(x) for j, x in enumerate(ol)]
                return tuple(vjp_fn(unflatten(cots, ospec)))
            basis = _basis(o)
            if o.numel() == 0:
                g = tuple(ops.zeros(*o.shape, *x.shape, dtype=x.dtype, device=x.device) for x in dl)
            else:
                g = vmap(one, chunk_size=chunk_size)(basis)
                g = tuple(ops.reshape(j, *o.shape, *x.shape) for j, x in zip(g, dl))
            rows.append(g[0] if not isinstance(argnums, tuple) and len(dl) == 1 and not isinstance(diff, (tuple,
                        list, dict)) else unflatten(list(g), dspec))
        jac = unflatten(rows, ospec)
        return (jac, res[2]) if has_aux else jac
    return wrapper


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """The Jacobian of ``func`` by forward mode: ``vmap`` of :func:`jvp` over the columns of the
    identity (jvp is the double-vjp trick). Result shape as :func:`jacrev`."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        idx, diff = _split(args, argnums)
        dl, dspec = flatten(diff)

        def f(*d):
            return func(*_replace(args, idx, unflatten(list(d), dspec)), **kwargs)
        cols = []
        aux = None
        sizes = [x.numel() for x in dl]
        total = sum(sizes)
        eye = ops.eye(total, dtype=dl[0].dtype, device=dl[0].device)
        tangents = []
        start = 0
        for x, n in zip(dl, sizes):
            tangents.append(ops.reshape(eye[:, start:start + n], total, *x.shape))
            start += n

        def push(*ts):
            r = jvp(f, tuple(dl), tuple(ts), has_aux=has_aux)
            return r[1] if not has_aux else (r[1], r[2])
        tout = vmap(push, randomness=randomness)(*tangents)
        if has_aux:
            tout, aux = tout
            aux = tree_map(lambda a: a[0] if isinstance(a, Tensor) else a, aux)
        ol, ospec = flatten(tout)
        for t in ol:
            oshape = tuple(t.shape[1:])
            parts, start = [], 0
            for x, n in zip(dl, sizes):
                blk = ops.narrow(t, 0, start, n)
                blk = ops.movedim(blk, 0, -1) if len(oshape) else blk
                parts.append(ops.reshape(blk, *oshape, *x.shape))
                start += n
            cols.append(parts[0] if not isinstance(argnums, tuple) and len(dl) == 1 and not isinstance(diff, (
                tuple, list, dict)) else unflatten(parts, dspec))
        jac = unflatten(cols, ospec)
        return (jac, aux) if has_aux else jac
    return wrapper


def hessian(func, argnums=0):
    """``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)

