"""Custom differentiable functions: ``ember.autograd.Function``."""
from __future__ import annotations

import functools

from .. import _state, ops
from .._tensor import Tensor, _alias
from .._graph import Node, _Packed, _SavedRef, _type_desc, edge_of, unpack_saved, view_requires_grad
from ..ops._args import broadcast_shapes
from ..ops.writes import check_inplace

_grad = _state.grad


def _is_tensor(x) -> bool:
    return isinstance(x, Tensor)


class FunctionCtx:
    """What ``forward`` and ``backward`` of a custom Function receive as ``ctx``."""

    def save_for_backward(self, *tensors) -> None:
        """Save tensors (or None) for ``backward``; read them back with ``ctx.saved_tensors``."""
        for t in tensors:
            if t is not None and not _is_tensor(t):
                raise TypeError(f"save_for_backward can only save variables, but argument {tensors.index(t)} is of "
                                f"type {type(t).__name__}")
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        saved = self.__dict__.get("_saved")
        if saved is None and "_packed" in self.__dict__:  # saved through saved_tensors_hooks
            unpack, packed = self.__dict__["_packed"]
            saved = []
            for p, ref, v in packed:
                if p is None:
                    saved.append((None, 0))
                    continue
                if ref._version[0] != v:  # the original's version counter, not the unpacked tensor's
                    saved = [(ref, v)]
                    break
                t = unpack_saved(p, unpack)
                saved.append((t, t._version[0]))
        if saved is None:
            if self.__dict__.get("_released"):
                raise RuntimeError(
                    "Trying to backward through the graph a second time (or directly access saved tensors after they "
                    "have already been freed). Saved intermediate values of the graph are freed when you call "
                    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                    "graph a second time or if you need to access saved tensors after calling backward.")
            return tuple(self.__dict__.get("_to_save", ()))
        out = []
        for t, v in saved:
            if t is not None and t._version[0] != v:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace operation: "
                    f"[{_desc(t)}] is at version {t._version[0]}; expected version {v} instead. Hint: enable anomaly "
                    "detection to find the operation that failed to compute its gradient, with "
                    "ember.autograd.set_detect_anomaly(True).")
            out.append(t)
        return tuple(out)

    saved_variables = saved_tensors

    def mark_dirty(self, *tensors) -> None:
        """Declare inputs that ``forward`` modified in place (they must be returned)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs that get no gradient (e.g. indices)."""
        self._non_diff = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, ``backward`` receives None for outputs that got no gradient."""
        self._materialize = bool(value)


def _desc(t):
    return _type_desc(t)


class BackwardCFunction(Node, FunctionCtx):
    """The graph node (and ``ctx``) of one ``Function.apply`` call."""

    _forward_cls = None

    def name(self) -> str:
        return self._forward_cls.__name__ + "Backward"

    def _n_outputs(self) -> int:
        return self.__dict__.get("_n_out", 1)

    def _apply(self, grads, create_graph):
        if self.__dict__.get("_released"):
            _ = self.saved_tensors  # raises the second-backward error
        metas = self.__dict__.get("_out_meta", ())
        if self.__dict__.get("_materialize", True):
            grads = [g if g is not None or m is None else ops.zeros(m[0], dtype=m[1], device=m[2])
                     for g, m in zip(grads, metas)]
        res = self._forward_cls.backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n = len(self.next_functions)
        if len(res) > n and all(r is None for r in res[n:]):
            res = res[:n]
        if len(res) != n:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients (expected {n}, "
                               f"got {len(res)})")
        for i, (g, m) in enumerate(zip(res, self.in_meta)):
            if g is None or m is None:
                continue
            if not _is_tensor(g):
                raise TypeError(f"function {self.name()} returned a gradient of type {type(g).__name__} at index {i}; "
                                "expected a Tensor or None")
            if g._shape != m[0]:
                ok = True
                try:
                    ok = len(g._shape) >= len(m[0]) and broadcast_shapes(g._shape, m[0]) == g._shape
                except RuntimeError:
                    ok = False
                if not ok:
                    raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index {i} - got "
                                       f"{list(g._shape)} but expected shape compatible with {list(m[0])}")
        return res

    def _release(self):
        self.__dict__.pop("_saved", None)
        self.__dict__.pop("_to_save", None)
        self.__dict__.pop("_packed", None)
        self._released = True


class FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)``, then
    call ``MyFunction.apply(*args)``.

    >>> class Square(ember.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * g
    """

    generate_vmap_rule = False

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. "
                           "Please use new-style autograd function with static forward method: "
                           "call MyFunction.apply(...)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError

    @classmethod
    def _uses_setup_context(cls) -> bool:
        return cls.setup_context is not Function.setup_context

    @classmethod
    def apply(cls, *args, **kwargs):
        if _state.vmap.depth:  # inside ember.func.vmap: the handler runs it once per example
            return _state.vmap.call("autograd.Function", cls._apply_eager, *args, **kwargs)
        return cls._apply_eager(*args, **kwargs)

    @classmethod
    def _apply_eager(cls, *args, **kwargs):
        ctx = cls._backward_cls()
        requires = [(_is_tensor(a) and (a._requires_grad or (a._base is not None and view_requires_grad(a))))
                    for a in args]
        ctx.needs_input_grad = tuple(requires)
        record = _grad.enabled and any(requires)
        prev = _grad.enabled
        _grad.enabled = False
        try:
            if cls._uses_setup_context():
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            _grad.enabled = prev
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        to_save = ctx.__dict__.get("_to_save", ())
        if not record:
            ctx.__dict__["_saved"] = [(t, t._version[0] if t is not None else 0) for t in to_save]
            return outputs
        ctx.next_functions = tuple(edge_of(a) if r else (None, 0) for a, r in zip(args, requires))
        ctx.in_meta = tuple((a._shape, a._dtype) if _is_tensor(a) else None for a in args)
        dirty = {id(t) for t in ctx.__dict__.get("_dirty", ())}
        nondiff = {id(t) for t in ctx.__dict__.get("_non_diff", ())}
        input_ids = {id(a) for a in args if _is_tensor(a)}
        new_outs = []
        metas = []
        for i, o in enumerate(outs):
            if not _is_tensor(o):
                new_outs.append(o)
                metas.append(None)
                continue
            if id(o) in dirty:
                check_inplace(o, cls.__name__)
            elif id(o) in input_ids:
                # an input returned unchanged: the output is a new alias with this node's history
                o = _alias(o, o._shape, o._stride, o._offset)
                o._base = None
            differentiable = id(o) not in nondiff and o._dtype.category >= 2
            if differentiable:
                o._grad_fn = ctx
                o._output_nr = i
                o._requires_grad = True
                if o._base is not None:
                    o._fn_version = o._version[0]
                metas.append((o._shape, o._dtype, o._device))
            else:
                o._requires_grad = False
                metas.append(None)
            new_outs.append(o)
        ctx._n_out = len(outs)
        ctx._out_meta = tuple(metas)
        hooks = _grad.saved_hooks
        if hooks is not None and to_save:
            ctx.__dict__["_packed"] = (hooks[1], [(None, None, 0) if t is None else
                                                  (_Packed(hooks[0](t)), _SavedRef(t), t._version[0])
                                                  for t in to_save])
        else:
            ctx.__dict__["_saved"] = [(t, t._version[0] if t is not None else 0) for t in to_save]
        ctx.__dict__.pop("_to_save", None)
        return new_outs[0] if single else tuple(new_outs)


class _DelayedErrorNode(Node):
    def __init__(self, n, msg):
        Node.__init__(self)
        self.msg = msg
        self.next_functions = ()
        self.needs_input_grad = ()
        self.in_meta = ()

    def name(self):
        return "DelayedError"

    def _apply(self, grads, create_graph):
        raise RuntimeError(self.msg)


def once_differentiable(fn):
    """Decorate a custom Function's ``backward`` that is not itself differentiable: it runs
    without recording, and differentiating its result raises."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = _grad.enabled
        _grad.enabled = False
        try:
            outputs = fn(ctx, *args)
        finally:
            _grad.enabled = prev
        if not prev:
            return outputs
        if not any(_is_tensor(a) and a._requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        node = _DelayedErrorNode(len(outs), "trying to differentiate twice a function that was marked with "
                                            "@once_differentiable")
        res = []
        for o in outs:
            if _is_tensor(o) and o._dtype.category >= 2:
                o = _alias(o, o._shape, o._stride, o._offset)
                o._base = None
                o._grad_fn = node
                o._requires_grad = True
            res.append(o)
        return res[0] if single else tuple(res)
    return wrapper


class InplaceFunction(Function):
    def __init__(self, inplace=False):  # pragma: no cover - legacy
        raise RuntimeError("InplaceFunction is legacy; use Function with static methods")


class NestedIOFunction(Function):  # pragma: no cover - legacy
    pass
