"""Writing results into existing tensors: ``out=`` arguments and in-place forms.

Every in-place form (``x.add_(y)``, ``x.clamp_(0)``, ``x.index_put_(...)``, ``F.relu(x,
inplace=True)``...) goes through :func:`inplace`, which picks one of two ways:

* **direct**: the op's kernel writes into the target (through ``out=`` when the backend lists
  the op in ``out_kernels``, else its result is copied in with the ``copy_`` primitive). This is
  taken when the declaration says the result has the target's dtype and shape (``result``
  "elementwise" or "first") and the target is the op's first argument, unpromoted. With autograd,
  the op is recorded out of place and the target takes over its history; a view's base is
  rebased through ``CopySlices``.
* **write back**: otherwise the op runs out of place and :func:`write_back` copies the result
  in, refusing what PyTorch refuses (a result dtype that can't be cast to the target's, a
  shape the target can't hold).

``out=`` is :func:`write_out`: the result is copied into the user's tensor, resized if needed.
"""
from __future__ import annotations

from .. import _dtype as D
from .. import _state
from .._tensor import Tensor
from .._graph import CopySlices, edge_of, grad_fn_of, view_requires_grad
from . import _args as U
from . import copy as CP
from .registry import ALL, dispatch, run, saved_inputs

_grad = _state.grad


# -- out= -------------------------------------------------------------------------------------

def write_out(out, r: Tensor, op: str, exact: bool = False) -> Tensor:
    """Store result ``r`` into the user's ``out=`` tensor (resized when its shape differs);
    ``exact``: ``out`` must have the result's dtype."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if _grad.enabled and (r._requires_grad or out._requires_grad):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, but one "
                           "of the arguments requires grad.")
    _check_result_dtype(out, r, op, exact, "output")
    if out._device != r._device:
        raise RuntimeError(f"{op}: Expected out tensor to have device {r._device}, but got {out._device} instead")
    if out._shape != r._shape:
        out.resize_(r._shape)
    return CP.copy_(out, r)


def _check_result_dtype(target: Tensor, r: Tensor, op: str, exact: bool, role: str) -> None:
    """PyTorch's refusals of a result dtype for the tensor written into (``role``: "output" for
    ``out=``, "base" for an in-place form): any other dtype with ``exact``, else one that can't
    be cast to the target's."""
    if exact and target._dtype is not r._dtype:
        raise RuntimeError(f"{op}: the {role} given to {op} has dtype {U.type_name(target._dtype)} but the "
                           f"operation's result requires dtype {U.type_name(r._dtype)}")
    if not D.can_cast(r._dtype, target._dtype):
        raise RuntimeError(f"{op}: result type {U.type_name(r._dtype)} can't be cast to the desired output type "
                           f"{U.type_name(target._dtype)}")


def write_out_tuple(out, results, op: str, exact: bool = False):
    """``out=(values, indices)`` for ops with several results; returns ``results``' named tuple
    type filled with the ``out`` tensors."""
    if not isinstance(out, (tuple, list)) or len(out) != len(results):
        raise TypeError(f"{op}(): argument 'out' must be a tuple of {len(results)} Tensors")
    written = [write_out(o, r, op, exact) for o, r in zip(out, results)]
    return type(results)(*written) if hasattr(results, "_fields") else tuple(written)


def store(r, out, op: str, exact: bool = False):
    """``r``, or ``r`` written into ``out`` when the caller passed one (tensor or tuple)."""
    if out is None:
        return r
    if isinstance(r, tuple):
        return write_out_tuple(out, r, op, exact)
    return write_out(out, r, op, exact)


# -- in-place ---------------------------------------------------------------------------------

def write_back(self: Tensor, r: Tensor, op: str, exact: bool = False) -> Tensor:
    """Store the out-of-place result ``r`` of an in-place form into ``self``, refusing what
    PyTorch refuses: a result dtype that can't be cast to self's (with ``exact``: any other
    dtype), or a shape self can't hold."""
    if not isinstance(self, Tensor):
        raise TypeError(f"{op}(): self must be a Tensor, not {type(self).__name__}")
    _check_result_dtype(self, r, op, exact, "base")
    if r._shape != self._shape and U.broadcast_shapes(self._shape, r._shape, op) != self._shape:
        raise RuntimeError(f"{op}: output with shape {list(self._shape)} doesn't match the broadcast shape "
                           f"{list(U.broadcast_shapes(self._shape, r._shape, op))}")
    return CP.copy_(self, r)


def _check_fits(self: Tensor, inputs: tuple, op: str) -> None:
    """An elementwise in-place op: every tensor operand must broadcast to ``self``'s shape."""
    shape = self._shape
    for t in inputs:
        if t is not self and t._shape != shape:
            bs = U.broadcast_shapes(shape, t._shape, op)
            if bs != shape:
                raise RuntimeError(f"{op}: output with shape {list(shape)} doesn't match the broadcast shape "
                                   f"{list(bs)}")


def inplace(op, self: Tensor, plan, name: str, exact: bool = False) -> Tensor:
    """The in-place form of ``op`` on ``self``, given its meta's ``plan`` for ``(self, ...)``:
    ``(device, kernel args, inputs)``, or ``(None, result, None)`` when meta computed the result."""
    dev, args, inputs = plan
    if dev is None:
        return write_back(self, args, name, exact)
    result = op.result
    if result is not None and args and args[0] is self:
        if result == "elementwise":
            _check_fits(self, inputs, name)
        return write_direct(op, self, dev, args, inputs, 0)
    return write_back(self, dispatch(op, dev, args, inputs), name, exact)


def become_view(self: Tensor, v: Tensor, name: str) -> Tensor:
    """In-place view ops (``t_``, ``transpose_``, ``squeeze_``...): ``self`` takes the geometry
    (and history) of its view ``v``."""
    if _grad.enabled and (self._requires_grad or (self._base is not None and self._base._requires_grad)):
        check_inplace(self, name)
    self._shape, self._stride, self._offset = v._shape, v._stride, v._offset
    self._native = None
    self._version[0] += 1
    if v._requires_grad:
        self._grad_fn, self._output_nr, self._requires_grad = v._grad_fn, v._output_nr, True
    self._fn_version = self._version[0]
    return self


def check_inplace(t, opname: str) -> None:
    """PyTorch's refusals for in-place ops under grad mode."""
    if not _grad.enabled:
        return
    b = t._base
    # a view that requires grad (also one made a leaf by requires_grad_()) of a leaf base, as
    # PyTorch: writing into it would rebase the leaf's history
    if b is not None and b._grad_fn is None and (t._requires_grad or b._requires_grad):
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if t._requires_grad and t._grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


# ops that write one value everywhere: elements sharing a memory location get the same value,
# so PyTorch lets them write into overlapping (expanded) tensors (``expanded.fill_(1)``, ``zero_()``)
_SAME_VALUE_WRITES = ("_full",)


def check_overlap(t, opname: str) -> None:
    """Refuse writes into tensors where several elements share one memory location (an empty
    tensor is written nowhere)."""
    if opname in _SAME_VALUE_WRITES or 0 in t._shape:
        return
    for s, st in zip(t._shape, t._stride):
        if st == 0 and s > 1:
            raise RuntimeError(
                f"{opname}: unsupported operation: more than one element of the written-to tensor refers to a "
                "single memory location. Please clone() the tensor before performing the operation.")


def write_direct(op, target: Tensor, dev, args: tuple, inputs: tuple, self_index: int | None = 0):
    """Run ``op`` writing into ``target``; ``inputs[self_index]`` is ``target`` (None: the op
    does not read target's old value, as ``copy_`` and ``fill_``).

    Without autograd the kernel writes through ``out=`` when it can, else its result is copied.
    With autograd the op is recorded out of place and ``target`` takes over its history; a
    view's base is rebased through ``CopySlices``.
    """
    if _grad.enabled:
        tracked = target._requires_grad or (target._base is not None and target._base._requires_grad)
        if not tracked:
            for t in inputs:
                if t._requires_grad or (t._base is not None and view_requires_grad(t)):
                    tracked = True
                    break
        if tracked:
            check_inplace(target, op.name)
            if target._base is not None and target._dtype is not target._base._dtype:
                raise RuntimeError(
                    f"{op.name}: ember does not record an in-place op on a view with another dtype than its base "
                    f"(the real/imag parts of a {target._base._dtype.name} tensor) under autograd; compute the "
                    "new parts out of place and build the tensor with ember.complex(real, imag)")
            return _write_recorded(op, target, dev, args, inputs, self_index)
    check_overlap(target, op.name)
    if op.name in dev._backend.out_kernels:
        dev._kernels[op.name](*args, out=target)
    else:
        r = run(op, dev, args)
        if r is not target:
            dev._kernels["copy_"](target, r)
    target._version[0] += 1
    return target


def _write_recorded(op, target, dev, args, inputs, self_index):
    saves = saved_inputs(op, args, inputs) if self_index is not None and op.differentiable else ()
    if saves == ALL or self_index in saves:
        # the formula needs the old value of target, which the write destroys: save a copy
        old = CP.clone(target)
        args = tuple(old if a is target else a for a in args)
        inputs = tuple(old if a is target else a for a in inputs)
    r = dispatch(op, dev, args, inputs)
    with _state.grad_disabled():
        check_overlap(target, op.name)
        dev._kernels["copy_"](target, r)
        target._version[0] += 1
    fn = r._grad_fn if r._requires_grad else None
    base = target._base
    if base is None:
        if fn is None:
            target._grad_fn = None
            target._requires_grad = False
        else:
            target._grad_fn = fn
            target._output_nr = r._output_nr
            target._requires_grad = True
        return target
    if fn is None and not base._requires_grad:
        return target
    node = CopySlices()
    node.fn = fn
    node.self_index = self_index
    node.geometry = (target._shape, target._stride, target._offset)
    node.base_geom = (base._shape, base._stride, base._offset)
    base_edge = edge_of(base) if base._requires_grad else (None, 0)
    if fn is None:
        rest, rest_meta = [], []
    elif self_index is None:
        rest, rest_meta = list(fn.next_functions), list(fn.in_meta)
    else:
        rest = [e for i, e in enumerate(fn.next_functions) if i != self_index]
        rest_meta = [m for i, m in enumerate(fn.in_meta) if i != self_index]
    node.next_functions = (base_edge, *rest)
    node.needs_input_grad = tuple(e[0] is not None for e in node.next_functions)
    node.in_meta = ((base._shape, base._dtype), *rest_meta)
    base._grad_fn = node
    base._output_nr = 0
    base._requires_grad = True
    # the view itself becomes as_strided of the base's new history
    target._requires_grad = True
    target._fn_version = -1
    grad_fn_of(target)
    return target
