"""The autograd graph: one ``Node`` per recorded op, ``AccumulateGrad`` per leaf, and the view
machinery (regenerated view histories, ``CopySlices`` for in-place ops on views).

It sits below the op families (the registry records ``OpNode``s), so the few ops its nodes
run are reached as Tensor methods, never imported. The public namespace is
``ember.autograd.graph``."""
from __future__ import annotations

import itertools
import math
import traceback
import weakref

from . import _state
from ._tensor import Tensor as _Tensor
from ._tensor import _alias

_seq = itertools.count()
_grad = _state.grad
_anomaly = _state.anomaly
_new = object.__new__
_weakref = weakref.ref


class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks_dict: dict):
        self.id = next(RemovableHandle._ids)
        self._hooks = hooks_dict

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class TensorMeta:
    """Shape, dtype and device of a tensor an op does not need to save for backward."""

    __slots__ = ("shape", "dtype", "device", "_stride", "_offset")

    def __init__(self, t):
        self.shape = t._shape
        self.dtype = t._dtype
        self.device = t._device
        self._stride = t._stride
        self._offset = t._offset

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return len(self.shape)

    def stride(self):
        return self._stride

    def numel(self):
        return math.prod(self.shape)

    @property
    def ndim(self):
        return len(self.shape)


class Node:
    """A backward function in the graph (``y.grad_fn``)."""

    __slots__ = ("next_functions", "needs_input_grad", "in_meta", "_seq", "_pre_hooks", "_hooks",
                 "_tensor_hooks", "_retain", "_trace", "__dict__", "__weakref__")

    def __init__(self):
        self._seq = next(_seq)
        self._pre_hooks = None
        self._hooks = None
        self._tensor_hooks = None
        self._retain = None
        self._trace = _stack(3) if _anomaly.enabled else None

    def name(self) -> str:
        return type(self).__name__

    @property
    def metadata(self) -> dict:
        return self.__dict__.setdefault("_metadata", {})

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node; may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = {}
        h = RemovableHandle(self._hooks)
        self._hooks[h.id] = fn
        return h

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        h = RemovableHandle(self._pre_hooks)
        self._pre_hooks[h.id] = fn
        return h

    def _add_tensor_hook(self, output_nr: int, fn):
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        d = self._tensor_hooks.setdefault(output_nr, {})
        h = RemovableHandle(d)
        d[h.id] = fn
        return h

    def _n_outputs(self) -> int:
        return 1

    def _apply(self, grads: list, create_graph: bool) -> tuple:  # pragma: no cover - abstract
        raise NotImplementedError

    def _release(self) -> None:
        """Free saved tensors after backward (unless retain_graph)."""

    def __call__(self, *grads):
        return self._apply(list(grads), _grad.enabled)

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"


class OpNode(Node):
    """The node of an op with a backward formula: ``op.backward(ctx, grad)``."""

    __slots__ = ("op", "args", "_out", "saved", "n_out", "out_meta", "_freed")

    def name(self) -> str:
        return self.op.node_name

    @property
    def out(self):
        """The op's output, for formulas that use it (``exp``, ``tanh``, ``softmax``...)."""
        o = self._out
        if o is None:
            self._check_freed()
            raise RuntimeError(f"{self.name()}: the output was not saved for backward")
        if _grad.enabled:  # double backward: the output carries this node's history
            if isinstance(o, tuple):
                return tuple(self._with_history(x, i) if x is not None and x._dtype.category >= 2 else x
                             for i, x in enumerate(o))
            return self._with_history(o, 0)
        return o

    def _with_history(self, o, i):
        a = _alias(o, o._shape, o._stride, o._offset)
        a._base = None
        a._requires_grad = True
        a._grad_fn = self
        a._output_nr = i
        return a

    def _check_freed(self):
        if self._freed:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after "
                "they have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved tensors after calling backward.")

    def _n_outputs(self) -> int:
        return self.n_out

    def _apply(self, grads: list, create_graph: bool) -> tuple:
        if self._freed:
            self._check_freed()
        for t, v in self.saved:
            if t._version[0] != v:
                own = t is self._out or (isinstance(self._out, tuple) and any(t is o for o in self._out))
                maker = self.name() if own else t._grad_fn.name() if t._grad_fn is not None else "a leaf"
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{_type_desc(t)}], which is output {t._output_nr} of "
                    f"{maker}, is at version {t._version[0]}; "
                    f"expected version {v} instead. Hint: enable anomaly detection to find the operation that "
                    "failed to compute its gradient, with ember.autograd.set_detect_anomaly(True).")
        if self.n_out == 1:
            g = grads[0]
        else:
            g = tuple(grads)
        res = self.op.backward(self, g)
        if not isinstance(res, tuple):
            res = (res,)
        return res

    def _release(self) -> None:
        self.args = None
        self._out = None
        self.saved = ()
        self._freed = True



class _Packed:
    """What a pack hook returned for one saved tensor."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class _SavedRef:
    """A saved tensor's version check without the tensor (its data went through a pack hook)."""

    __slots__ = ("_version", "_output_nr", "_grad_fn", "_shape", "_desc")

    def __init__(self, t):
        self._version = t._version
        self._output_nr = t._output_nr
        self._grad_fn = t._grad_fn
        self._shape = t._shape
        self._desc = t.type()

    def type(self) -> str:
        return self._desc


def _pack_tree(a, pack):
    if isinstance(a, _Tensor):
        return _Packed(pack(a))
    if isinstance(a, (list, tuple)) and any(isinstance(x, _Tensor) for x in a):
        return type(a)(_pack_tree(x, pack) for x in a)
    return a


def _unpack_tree(a, unpack):
    if a.__class__ is _Packed:
        t = unpack(a.value)
        if not isinstance(t, _Tensor):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                            f"{type(t).__name__}")
        return t
    if isinstance(a, (list, tuple)) and any(x.__class__ is _Packed for x in a):
        return type(a)(_unpack_tree(x, unpack) for x in a)
    return a


def unpack_saved(p, unpack):
    """The unpack hook's tensor for one packed saved tensor."""
    return _unpack_tree(p, unpack)


_args_slot = OpNode.args
_out_slot = OpNode._out


class PackedOpNode(OpNode):
    """An ``OpNode`` recorded under ``saved_tensors_hooks``: its saved tensors were replaced by
    what the pack hook returned, and ``args``/``_out`` give the unpack hook's tensors on read
    (once per backward; released with the node)."""

    __slots__ = ()

    @property
    def args(self):
        d = self.__dict__
        a = d.get("_unpacked_args")
        if a is None:
            a = _args_slot.__get__(self)
            if a is not None:
                a = d["_unpacked_args"] = _unpack_tree(a, d["_unpack"])
        return a

    @args.setter
    def args(self, value):
        _args_slot.__set__(self, value)
        self.__dict__.pop("_unpacked_args", None)

    @property
    def _out(self):
        d = self.__dict__
        o = d.get("_unpacked_out")
        if o is None:
            o = _out_slot.__get__(self)
            if o is not None:
                o = d["_unpacked_out"] = _unpack_tree(o, d["_unpack"])
        return o

    @_out.setter
    def _out(self, value):
        _out_slot.__set__(self, value)
        self.__dict__.pop("_unpacked_out", None)


def pack_saved(node) -> None:
    """Run the innermost ``saved_tensors_hooks``' pack hook on every tensor ``node`` saved (called by
    ``record`` only while such hooks are active, so the normal path pays one attribute read)."""
    pack, unpack = _grad.saved_hooks
    args = _args_slot.__get__(node)
    out = _out_slot.__get__(node)
    node.saved = tuple((_SavedRef(t), v) for t, v in node.saved)
    node.__class__ = PackedOpNode
    node.__dict__["_unpack"] = unpack
    _args_slot.__set__(node, _pack_tree(args, pack))
    if out is not None:
        _out_slot.__set__(node, _pack_tree(out, pack))


class AccumulateGrad(Node):
    """The node of a leaf tensor that requires grad: adds incoming gradients to ``.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        Node.__init__(self)
        self.variable = variable
        self.next_functions = ()
        self.needs_input_grad = ()
        self.in_meta = ()

    def name(self) -> str:
        return "AccumulateGrad"

    def _apply(self, grads, create_graph):  # accumulation is done by the engine
        return ()


def accumulate_node(t) -> AccumulateGrad:
    """The AccumulateGrad node of leaf ``t`` (kept alive by the graph, weakly by the tensor)."""
    ref = t._accum
    node = ref() if ref is not None else None
    if node is None:
        node = _new(AccumulateGrad)  # (AccumulateGrad(t), without the calls through the __init__s)
        node._seq = next(_seq)
        node._pre_hooks = node._hooks = node._tensor_hooks = node._retain = None
        node._trace = _stack(1) if _anomaly.enabled else None
        node.variable = t
        node.next_functions = node.needs_input_grad = node.in_meta = ()
        t._accum = _weakref(node)
    return node


def op_node() -> OpNode:
    """A new ``OpNode`` without hooks: what ``OpNode()`` makes, one call cheaper (``record``
    makes one per recorded op)."""
    node = _new(OpNode)
    node._seq = next(_seq)
    node._pre_hooks = node._hooks = node._tensor_hooks = node._retain = None
    node._trace = _stack(3) if _anomaly.enabled else None  # (from record: up to dispatch)
    return node


def _stack(drop: int) -> list:
    """The creation stack anomaly mode keeps on a node, without this call and the ``drop``
    innermost frames (the node's construction)."""
    return traceback.format_stack()[:-1 - drop]


def edge_of(t):
    """The ``(node, output_nr)`` gradients for ``t`` flow into, or ``(None, 0)``."""
    if not t._requires_grad:
        return (None, 0)
    fn = t._grad_fn if t._base is None else grad_fn_of(t)
    if fn is None:
        return (accumulate_node(t), 0)
    return (fn, t._output_nr)


class ViewRegenNode(Node):
    """History of a view whose base was modified in place: the view is ``as_strided`` of the
    base's current value, so its gradient is scattered into the base's geometry."""

    __slots__ = ("base_meta", "geometry")

    def name(self) -> str:
        return "AsStridedBackward0"

    def _apply(self, grads, create_graph):
        g = grads[0]
        shape, stride, offset = self.base_meta
        return (scatter_to_geometry(g, self.geometry, shape, stride, offset),)


class CopySlices(Node):
    """History of a base after an in-place op on one of its views (as PyTorch's CopySlices)."""

    __slots__ = ("fn", "self_index", "geometry", "base_geom")

    def name(self) -> str:
        return "CopySlices"

    def _apply(self, grads, create_graph):
        g = grads[0]
        bshape, bstride, boffset = self.base_geom
        vshape, vstride, voffset = self.geometry
        result = g.new_empty_strided(bshape, bstride)
        result.copy_(g)
        region = result.as_strided(vshape, vstride, voffset - boffset)
        if self.fn is None:  # the region was overwritten by constants
            region.zero_()
            return (result,)
        res = list(self.fn._apply([region.clone()], create_graph))
        if self.self_index is not None:
            gs = res.pop(self.self_index)
            if gs is None:
                region.zero_()
            else:
                region.copy_(_reduce_to(gs, vshape, self.fn, self.self_index))
        else:
            region.zero_()
        return (result, *res)

    def _release(self):
        if self.fn is not None:
            self.fn._release()


def _reduce_to(g, shape, node, idx):
    if g._shape != tuple(shape):
        g = g.sum_to_size(shape)
    return g


def scatter_to_geometry(g, geometry, bshape, bstride, boffset):
    """A tensor with ``bshape``/``bstride`` that is zero except where the view described by
    ``geometry`` (absolute storage shape/stride/offset) lies, which holds ``g``."""
    vshape, vstride, voffset = geometry
    result = g.new_empty_strided(bshape, bstride)
    result.zero_()
    if _self_overlapping(vshape, vstride):
        # several elements of the view share a location: their gradients add up there
        idx = [voffset - boffset]
        for size, stride in zip(vshape, vstride):
            idx = [i + k * stride for i in idx for k in range(size)]
        span = 1 + sum((s - 1) * st for s, st in zip(bshape, bstride)) if math.prod(bshape) else 0
        flat = result.as_strided((span,), (1,), 0)
        flat.index_add_(0, g.new_tensor(idx).long(), g.reshape(-1))
        return result
    region = result.as_strided(vshape, vstride, voffset - boffset)
    region.add_(g)
    return result


def _self_overlapping(shape, stride) -> bool:
    """Whether two elements of the geometry may share a location (False is certain)."""
    dims = sorted((st, s) for s, st in zip(shape, stride) if s > 1)
    reach = 0
    for st, s in dims:
        if st <= reach:
            return True
        reach += (s - 1) * st
    return False


def grad_fn_of(t):
    """``t.grad_fn`` for a view, regenerating it when its base was modified in place since."""
    fn = t._grad_fn
    if t._fn_version == t._version[0]:
        return fn
    base = t._base
    if not base._requires_grad or not _needs_regen(t):
        t._fn_version = t._version[0]
        return fn
    if t._dtype is not base._dtype:
        raise RuntimeError(f"a {t._dtype.name} view (real/imag parts) of a {base._dtype.name} tensor that was "
                           "modified in place since the view was taken: ember can't regenerate its history; "
                           "take the view again after the in-place op")
    node = ViewRegenNode()
    node.next_functions = (edge_of(base),)
    node.needs_input_grad = (True,)
    node.in_meta = ((base._shape, base._dtype),)
    node.base_meta = (base._shape, base._stride, base._offset)
    node.geometry = (t._shape, t._stride, t._offset)
    t._grad_fn = node
    t._output_nr = 0
    t._requires_grad = True
    t._fn_version = t._version[0]
    return node


def view_requires_grad(t) -> bool:
    """Whether view ``t`` takes part in autograd now (its base may have gained history since
    the view was made, through an in-place op on another view)."""
    if t._requires_grad:
        return True
    if not t._base._requires_grad:
        return False
    grad_fn_of(t)
    return t._requires_grad


def _needs_regen(t) -> bool:
    # a view made under no_grad (or of a base that did not need grad then) keeps no history
    return t._requires_grad or t._base._grad_fn is not None


def _type_desc(t) -> str:
    return f"{t.type()} [{', '.join(str(s) for s in t._shape)}]"
