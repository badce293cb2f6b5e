"""Declaring an op: one declaration makes the public function, its ``out=`` form, its in-place
form and its Tensor method. Core ops and plugin ops use the same two declarations.

**A kernel op** has a dispatch boundary: backends may implement it, and it has a decomposition
into other ops and/or a backward formula. Its ``meta`` validates and normalises the arguments
(raising PyTorch's exception types, naming the op, shapes, dtypes and devices) and returns the
plan ``(device, kernel_args, inputs)``: the canonical device, the arguments the kernel (or the
decomposition) receives, and the tensors autograd differentiates with respect to, in the order
the backward formula returns gradients. A meta that can answer without a kernel returns
``(None, result, None)``::

    @defop("hypot", decomposition=_hypot_decomp, backward=_hypot_bw, result="elementwise", inplace=True)
    def hypot(input, other):
        "sqrt(input^2 + other^2)"
        return binary_plan("hypot", input, other, FLOAT_RESULT)

    hypot_ = hypot.inplace

**A composite op** is written in other ops and differentiated through them::

    @composite("lerp", inplace=True)
    def lerp(input, end, weight):
        "input + weight * (end - input)"
        return add(input, mul(weight, sub(end, input)))

Both return the generated public function: ``hypot(input, other, *, out=None)``. It carries
``.op`` (the :class:`~ember.ops.registry.OpDef` in :data:`OPS`) and ``.inplace`` (the in-place
form ``hypot_(self, other)``, or None). ``result`` tells the in-place form what it may assume of
the kernel's result: ``"elementwise"`` (the first argument's dtype, the broadcast shape of the
tensor arguments) or ``"first"`` (the first argument's shape and dtype) let it write straight
into ``self``; otherwise it computes out of place and writes back (see :mod:`ember.ops.writes`).
``method`` (default True) makes the function and its in-place form ``Tensor`` methods.
"""
from __future__ import annotations

import inspect
import sys

from . import autocast as AC
from .. import _dtype as _D
from .. import _state
from .._tensor import Tensor as _Tensor
from . import writes as W
from .registry import ALL, dispatch, make_view, register_op

__all__ = ["defop", "composite", "viewop", "ALL"]

RESULT_RULES = (None, "elementwise", "first")


def defop(name: str, meta=None, *, decomposition=None, backward=None, saves=ALL, save_output=False,
          differentiable=None, result=None, inplace=False, out=True, exact_dtype=False, returns=None, method=True,
          group="", doc="", module=None, plugin="", replace=False, host=None, materialize=True):
    """Declare a kernel op whose ``meta`` returns ``(device, kernel_args, inputs)`` (see the
    module docstring); returns the public function. Without ``meta`` it is a decorator for it.

    ``inplace``: make the in-place form ``name_``; ``out``: give the function an ``out=``
    argument; ``exact_dtype``: ``out=`` and in-place targets must have the result's dtype (as
    PyTorch's ``float_power`` and the predicates), instead of any dtype it can be cast to;
    ``returns``: a named tuple type the kernel's tuple of results is wrapped in (``sort`` returns
    ``(values, indices)``); ``host``: the op's host path, a function of the kernel arguments on
    numpy arrays, run through the host where the backend has no kernel and the op no
    decomposition (see :func:`ember.ops.registry.dispatch`); ``materialize=False``: the backward
    gets None, not zeros, for outputs that received no gradient."""
    if meta is None:
        return lambda m: defop(name, m, decomposition=decomposition, backward=backward, saves=saves,
                               save_output=save_output, differentiable=differentiable, result=result, inplace=inplace,
                               out=out, exact_dtype=exact_dtype, returns=returns, method=method, group=group, doc=doc,
                               module=module or _caller_module(), plugin=plugin, replace=replace,
                               host=host, materialize=materialize)
    if result not in RESULT_RULES:
        raise ValueError(f"defop {name!r}: result must be one of {RESULT_RULES}, got {result!r}")
    if result is not None and backward is None and differentiable is not False and decomposition is not None:
        # an op differentiated through its decomposition records the decomposition's last op, whose
        # inputs are not this op's: an in-place form writing straight into a view would misroute them
        raise ValueError(f"defop {name!r}: result= needs a backward formula (or differentiable=False)")
    op = register_op(name, meta=meta, decomposition=decomposition, backward=backward, saves=saves,
                     save_output=save_output, differentiable=differentiable, group=group, plugin=plugin,
                     doc=doc or meta.__doc__ or "", result=None if exact_dtype else result, method=method,
                     replace=replace, host=host, materialize=materialize)
    return _fronts(op, meta, False, out, inplace, exact_dtype, module or _caller_module(), returns)


def composite(name: str, impl=None, *, inplace=False, out=True, exact_dtype=False, method=True, group="", doc="",
              module=None, plugin="", replace=False):
    """Declare an op written in other ops (``impl`` returns the result); returns the public
    function. Without ``impl`` it is a decorator for it. ``inplace`` is True (the in-place form
    computes out of place and writes back) or a function ``(self, ...) -> self`` that updates
    ``self`` itself (``addcmul_`` adds in place); ``out`` and ``exact_dtype`` as for :func:`defop`."""
    if impl is None:
        return lambda f: composite(name, f, inplace=inplace, out=out, exact_dtype=exact_dtype, method=method,
                                   group=group, doc=doc, module=module or _caller_module(), plugin=plugin,
                                   replace=replace)
    op = register_op(name, decomposition=impl, group=group, plugin=plugin, doc=doc or impl.__doc__ or "",
                     composite=True, method=method, replace=replace)
    return _fronts(op, impl, True, out, inplace, exact_dtype, module or _caller_module())


def viewop(name: str, geometry=None, *, backward, inplace=False, method=True, doc="", module=None, plugin="",
           replace=False):
    """Declare a view op: ``geometry(input, ...)`` validates the arguments and returns
    ``(x, shape, stride, offset, args)`` (the tensor viewed, the view's geometry in elements, and
    what ``backward(ctx, grad)`` reads as ``ctx.args``), or a finished tensor. The generated
    front end makes the alias in the core (:func:`~ember.ops.registry.make_view`); ``inplace``
    makes ``name_``, which gives ``self`` the view's geometry. Without ``geometry`` it is a
    decorator for it."""
    if geometry is None:
        return lambda g: viewop(name, g, backward=backward, inplace=inplace, method=method, doc=doc,
                                module=module or _caller_module(), plugin=plugin, replace=replace)
    op = register_op(name, meta=geometry, backward=backward, saves=(), group="view", plugin=plugin,
                     doc=doc or geometry.__doc__ or "", method=method, replace=replace)
    module = module or _caller_module()
    params = list(inspect.signature(geometry).parameters.values())
    parts, call, kwdefaults = _param_source(params)
    ns = {"_body": geometry, "_op": op, "_make_view": make_view, "W": W, "_vm": _state.vmap, "_vmo": _state.vmap_open}
    src = (f"def {name}({_defn(parts, False)}):\n{_vmap_line(name, call)}    g = _body({call})\n"
           "    return _make_view(_op, *g) if g.__class__ is tuple else g\n")
    fn = _attach(op, _build(src, ns, name, geometry, module, kwdefaults, op.doc))
    if inplace:
        ns["_front"] = fn
        iparts, icall = _self_first(parts, call, params[0].name)
        isrc = (f"def {name}_({_defn(iparts, False)}):\n{_vmap_line(name + '_', icall)}"
                f"    return W.become_view(self, _front({icall}), {name + '_'!r})\n")
        _attach(op, _build(isrc, ns, name + "_", geometry, module, kwdefaults,
                           f"In-place :func:`{name}`: ``self`` becomes the view."), fn)
    return fn


def _caller_module() -> str:
    """The module whose code declared the op (for the front end's ``__module__``)."""
    f = sys._getframe(1)
    while f is not None and f.f_globals.get("__name__") == __name__:
        f = f.f_back
    return f.f_globals.get("__name__", "ember.ops") if f is not None else "ember.ops"


# -- generation of the front ends ----------------------------------------------------------------

def _fronts(op, body, is_composite: bool, with_out: bool, inplace, exact: bool, module: str, returns=None):
    params = list(inspect.signature(body).parameters.values())
    if with_out and any(p.name == "out" for p in params):
        raise TypeError(f"op {op.name!r}: the meta/impl must not take 'out' (the front end adds it)")
    parts, call, kwdefaults = _param_source(params)
    ns = {"_body": body, "_op": op, "_dispatch": dispatch, "W": W, "_exact": exact, "_returns": returns,
          "_vm": _state.vmap, "_vmo": _state.vmap_open}
    name = op.name
    if is_composite:
        run = f"    r = _body({call})\n"
    elif returns is not None:
        run = (f"    dev, args, inputs = _body({call})\n"
               "    r = _returns(*_dispatch(_op, dev, args, inputs)) if dev is not None else args\n")
    else:
        run = (f"    dev, args, inputs = _body({call})\n"
               "    r = _dispatch(_op, dev, args, inputs) if dev is not None else args\n")
    fast = "" if is_composite or returns is not None else _fast_unary(op, body, params, ns)
    if name in AC.LISTED:
        # on autocast's lists: under autocast the arguments are cast first (out= calls are not eligible)
        ns["_ac"], ns["_amp"] = AC._ac, AC.call
        ns["_plain"] = _build(f"def {name}({_defn(parts, False)}):\n{fast.format(out='')}{run}    return r\n",
                              dict(ns), name, body, module, kwdefaults, op.doc)
        run = (f"    if _ac.active{' and out is None' if with_out else ''}:\n"
               f"        return _amp({name!r}, _plain, {call})\n") + fast.format(out="out is None and " if with_out
                                                                             else "") + run
    else:
        run = fast.format(out="out is None and " if with_out else "") + run
    if with_out:
        src = (f"def {name}({_defn(parts, True)}):\n{_vmap_line(name, call + ', out=out')}{run}"
               f"    return r if out is None else W.store(r, out, {name!r}, _exact)\n")
        fn = _build(src, ns, name, body, module, {**kwdefaults, "out": None}, op.doc)
    else:
        fn = _build(f"def {name}({_defn(parts, False)}):\n{_vmap_line(name, call)}{run}    return r\n", ns, name, body,
                    module, kwdefaults,
                    op.doc)
    _attach(op, fn)
    if inplace:
        if not params or params[0].kind not in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
            raise TypeError(f"op {op.name!r}: an in-place form needs a first positional tensor argument")
        iname = name + "_"
        iparts, icall = _self_first(parts, call, params[0].name)
        if callable(inplace):
            ns["_ibody"] = inplace
            line = f"_ibody({icall})"
        elif is_composite:
            line = f"W.write_back(self, _body({icall}), {iname!r}, _exact)"
        else:
            line = f"W.inplace(_op, self, _body({icall}), {iname!r}, _exact)"
        _attach(op, _build(f"def {iname}({_defn(iparts, False)}):\n{_vmap_line(iname, icall)}    return {line}\n", ns,
                           iname, body, module,
                           kwdefaults, f"In-place :func:`{name}` (``self`` keeps its dtype and shape)."), fn)
    return fn


def _fast_unary(op, body, params, ns: dict) -> str:
    """The first lines (a ``str.format`` template: ``{out}`` is the front's ``out is None`` test)
    of a unary op's front whose meta passes a floating tensor as it is
    (``meta.float_plain``: the dtypes it refuses): a plain ``Tensor`` of a floating dtype that
    takes no part in autograd goes straight to the device's kernel, as dispatch would send it
    (one frame around the kernel instead of three); anything else, or no kernel, takes the
    meta and dispatch."""
    refuse = getattr(body, "float_plain", None)
    if refuse is None or len(params) != 1:
        return ""
    x = params[0].name
    ns.update(_T=_Tensor, _FLOAT=_D._FLOAT, _refuse=refuse)
    cond = f"{x}.__class__ is _T and {x}._base is None and not {x}._requires_grad and not _vmo[0]"
    return (f"    if {{out}}{cond}:\n"
            f"        dt = {x}._dtype\n"
            f"        if dt.category == _FLOAT{' and dt not in _refuse' if refuse else ''}:\n"
            f"            k = {x}._device._kernels.get({op.name!r})\n"
            "            if k is not None:\n"
            "                try:\n"
            f"                    return k({x})\n"
            "                except MemoryError as e:\n"
            f"                    raise RuntimeError(f\"{op.name}: can't allocate memory: {{{{e}}}}\") from None\n")


def _vmap_line(name: str, call: str) -> str:
    """The first line of every front: inside ``ember.func.vmap`` the call goes to its batching
    handler (``front`` is the function itself); while no thread is in a vmap it costs one global read."""
    call = f", {call}" if call and not call.startswith(", ") else call
    return f"    if _vmo[0] and _vm.depth:\n        return _vm.call(_op, {name}{call})\n"


def _attach(op, generated, front=None):
    """Make ``generated`` the op's front end, or (given ``front``) its in-place form; returns it."""
    generated.op = op
    generated.inplace = None
    if front is None:
        op.fn = generated
    else:
        op.inplace_fn = front.inplace = generated
    return generated


def _self_first(parts, call: str, first: str):
    """``parts`` and ``call`` (see :func:`_param_source`) with the first parameter named ``self``,
    for an in-place form."""
    return ([("self" + p[len(first):], k) if i == 0 else (p, k) for i, (p, k) in enumerate(parts)],
            "self" + call[len(first):])


def _param_source(params):
    """``(parts, call text, keyword-only defaults)`` for a signature; ``parts`` are
    ``(definition text, kind)`` pairs."""
    parts, call = [], []
    kwdefaults = {}
    for p in params:
        k = p.kind
        if k is p.POSITIONAL_ONLY or k is p.POSITIONAL_OR_KEYWORD:
            parts.append((p.name if p.default is p.empty else f"{p.name}=None", "pos"))
            call.append(p.name)
        elif k is p.VAR_POSITIONAL:
            parts.append((f"*{p.name}", "star"))
            call.append(f"*{p.name}")
        elif k is p.KEYWORD_ONLY:
            parts.append((p.name if p.default is p.empty else f"{p.name}=None", "kw"))
            call.append(f"{p.name}={p.name}")
            if p.default is not p.empty:
                kwdefaults[p.name] = p.default
        else:
            parts.append((f"**{p.name}", "kwargs"))
            call.append(f"**{p.name}")
    return parts, ", ".join(call), kwdefaults


def _defn(parts, with_out: bool) -> str:
    """A parameter list from ``parts``, with a keyword-only ``out=None`` when asked."""
    out = []
    star = False
    for text, kind in parts:
        if kind == "star":
            star = True
        elif kind == "kw" and not star:
            out.append("*")
            star = True
        elif kind == "kwargs" and with_out:
            if not star:
                out.append("*")
                star = True
            out.append("out=None")
            with_out = False
        out.append(text)
    if with_out:
        if not star:
            out.append("*")
        out.append("out=None")
    return ", ".join(out)


def _build(src: str, ns: dict, name: str, body, module: str, kwdefaults: dict, doc: str):
    exec(compile(src, f"<ember op {name}>", "exec"), ns)
    fn = ns[name]
    fn.__defaults__ = body.__defaults__
    fn.__kwdefaults__ = kwdefaults or None
    fn.__module__ = module
    fn.__qualname__ = name
    fn.__doc__ = doc
    return fn
