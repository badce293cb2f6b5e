"""vmap's batched tensors and the handler every op front calls while a vmap runs.

A :class:`BatchedTensor` is an ember ``Tensor`` whose metadata is the *logical* tensor (one
example) and whose ``_value`` is the physical tensor with the batch dim first; ``_level`` says
which vmap it belongs to (1 for the outermost). Under nested vmaps the value of a level-2 tensor
may itself be a level-1 ``BatchedTensor``. The tensor has no storage: every op on it goes to
:func:`handle` (the op fronts of :mod:`ember.ops.declare` and the ``nn.functional`` functions
check ``ember._state.vmap.depth`` first), which unwraps the highest level among the arguments and
runs the op's batching rule (:mod:`ember.func._rules`) on the values, or, for an op without
one, a loop over the examples (recorded in :data:`vmap_fallbacks`).
"""
from __future__ import annotations

import collections
import contextlib
import warnings

from .. import _dtype as D
from .. import _state, ops
from .._tensor import Tensor, _new

__all__ = ["BatchedTensor", "vmap_fallbacks", "set_vmap_fallback_warning_enabled", "RULES", "F_RULES",
           "RANDOM_OPS"]

_vm = _state.vmap

#: op name -> how many times a vmap ran it as a loop over the examples (no batching rule)
vmap_fallbacks: collections.Counter = collections.Counter()
_warn = [False]

#: op name -> rule(op, front, level, args, kwargs); filled by ember.func._rules
RULES: dict = {}
#: nn.functional key -> rule(fn, level, args, kwargs)
F_RULES: dict = {}
#: random ops, under vmap's ``randomness`` flag
RANDOM_OPS = {"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "normal",
              "bernoulli", "bernoulli_", "uniform_", "normal_", "random_", "multinomial", "dropout", "exponential_",
              "cauchy_", "log_normal_", "geometric_", "poisson", "rrelu", "feature_alpha_dropout", "alpha_dropout",
              "dropout1d", "dropout2d", "dropout3d", "native_dropout"}


def set_vmap_fallback_warning_enabled(enabled: bool = True) -> None:
    """Warn (``UserWarning``) the first time vmap runs an op as a per-example loop."""
    _warn[0] = bool(enabled)


class BatchedTensor(Tensor):
    """One example's view of a batch (inside :func:`ember.func.vmap`); ``_value`` holds the batch
    with the batch dim first."""

    __slots__ = ("_value", "_level")

    # -- autograd flags live on the value ---------------------------------------------------
    @property
    def requires_grad(self):
        return self._value.requires_grad

    @requires_grad.setter
    def requires_grad(self, v):
        self._value.requires_grad = v

    def requires_grad_(self, requires_grad: bool = True):
        self._value.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._value.grad_fn

    @property
    def _grad_fn(self):
        raise RuntimeError("vmap: ember.autograd.grad and backward() can't see through a batched tensor inside vmap; "
                           "use ember.func.grad, ember.func.vjp or ember.func.jacrev inside the vmapped function")

    @_grad_fn.setter
    def _grad_fn(self, value):
        pass


    @property
    def is_leaf(self):
        return self._value.is_leaf

    @property
    def grad(self):
        raise RuntimeError("vmap: accessing .grad of a batched tensor inside vmap is not supported; use "
                           "ember.func.grad instead of .backward()")

    def detach(self):
        return wrap(self._value.detach(), self._level)

    def backward(self, *a, **k):
        raise RuntimeError("vmap: backward() on a batched tensor is not supported inside vmap; use ember.func.grad "
                           "or ember.func.vjp inside the vmapped function")

    def to(self, *args, **kwargs):
        return _apply_unary(self, lambda v: v.to(*args, **kwargs))

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            return self._value.type()
        return _apply_unary(self, lambda v: v.type(dtype))

    def float(self):
        return self.to(_dtype("float32"))

    def double(self):
        return self.to(_dtype("float64"))

    def half(self):
        return self.to(_dtype("float16"))

    def long(self):
        return self.to(_dtype("int64"))

    def int(self):
        return self.to(_dtype("int32"))

    def bool(self):
        return self.to(_dtype("bool"))

    def cpu(self):
        return self.to("cpu")

    def type_as(self, other):
        return self.to(other.dtype)

    # -- data-dependent python control flow ----------------------------------------------------
    def _data_dependent(self, *a, **k):
        raise RuntimeError("vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
                           "flow. We don't support that yet, please shout over at "
                           "https://github.com/pytorch/functorch/issues/257 .")

    item = tolist = numpy = __bool__ = __float__ = __int__ = __index__ = __complex__ = _data_dependent
    __array__ = _host = _data_dependent

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        return iter([self[i] for i in range(len(self))])

    def __repr__(self):
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n{self._value!r}\n)"

    def __reduce_ex__(self, proto):
        raise RuntimeError("vmap: a batched tensor can't be pickled")

    def __deepcopy__(self, memo):
        return self.clone()

    def untyped_storage(self):
        raise RuntimeError("vmap: a batched tensor has no storage of its own")

    storage = data_ptr = untyped_storage


def _dtype(name):
    return getattr(D, name)


def _apply_unary(bt, f):
    return wrap(f(bt._value), bt._level)


def wrap(value, level: int) -> Tensor:
    """The level-``level`` batched tensor over ``value`` (batch dim first)."""
    if not isinstance(value, Tensor):
        return value
    t = _new(BatchedTensor)
    shape = tuple(value._shape[1:])
    t._storage = None
    t._shape = shape
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    t._stride = tuple(reversed(st))
    t._offset = 0
    t._dtype = value._dtype
    t._device = value._device
    t._native = None
    t._version = value._version
    t._base = None
    t._requires_grad = False
    t._grad_fn = None
    t._output_nr = 0
    t._grad = None
    t._retains_grad = False
    t._hooks = None
    t._accum = None
    t._fn_version = 0
    t._value = value
    t._level = level
    return t


def level_of(x) -> int:
    return x._level if x.__class__ is BatchedTensor else 0


def batch_size(level: int) -> int:
    for lv, size, _ in _vm.levels:
        if lv == level:
            return size
    raise RuntimeError(f"vmap: no vmap of level {level} is running")


def randomness(level: int) -> str:
    for lv, _, r in _vm.levels:
        if lv == level:
            return r
    return "error"


@contextlib.contextmanager
def suspended():
    """Run plain ops (no batched argument) with the vmap check off."""
    d = _vm.depth
    _vm.depth = 0
    try:
        yield
    finally:
        _vm.depth = d


def _scan(obj, acc):
    if obj.__class__ is BatchedTensor:
        acc.append(obj._level)
    elif obj.__class__ in (list, tuple):
        for o in obj:
            _scan(o, acc)
    return acc


def top_level(args, kwargs) -> int:
    acc = _scan(args, [])
    for v in kwargs.values():
        _scan(v, acc)
    return max(acc) if acc else 0


def unwrap_at(obj, level):
    """``obj`` with its level-``level`` batched tensors replaced by their values."""
    if obj.__class__ is BatchedTensor and obj._level == level:
        return obj._value
    if obj.__class__ in (list, tuple):
        return obj.__class__(unwrap_at(o, level) for o in obj)
    return obj


def is_batched_at(obj, level) -> bool:
    return obj.__class__ is BatchedTensor and obj._level == level


def handle(op, front, *args, **kwargs):
    """The op fronts' vmap handler: ``op`` is an ``OpDef`` (or an ``nn.functional`` key)."""
    name = op if isinstance(op, str) else op.name
    if front is not None and getattr(op, "inplace_fn", None) is front:
        name += "_"
    level = top_level(args, kwargs)
    if name in RANDOM_OPS and _vm.levels:
        check = RULES.get("__random__")
        r = check(name, front, level, args, kwargs) if check else NotImplemented
        if r is not NotImplemented:
            return r
    if level == 0:
        with suspended():
            return front(*args, **kwargs)
    if isinstance(op, str):
        rule = F_RULES.get(name)
        if rule is not None:
            r = rule(front, level, args, kwargs)
            if r is not NotImplemented:
                return r
        return front(*args, **kwargs)  # the nn.functional function decomposes into ops
    rule = RULES.get(name)
    if rule is not None:
        r = rule(op, front, level, args, kwargs)
        if r is not NotImplemented:
            return r
    if op.composite and front is op.fn and kwargs.get("out") is None:
        kwargs.pop("out", None)
        return op.decomposition(*args, **kwargs)  # written in ops: each is batched by its own rule
    return _loop(name, front, level, args, kwargs)


def _select(obj, level, i):
    if obj.__class__ is BatchedTensor and obj._level == level:
        return obj._value.select(0, i)
    if obj.__class__ in (list, tuple):
        return obj.__class__(_select(o, level, i) for o in obj)
    return obj


def _loop(name, front, level, args, kwargs):
    """The fallback: the op once per example, the results stacked."""
    vmap_fallbacks[name] += 1
    if _warn[0] and vmap_fallbacks[name] == 1:
        warnings.warn(f"There is a performance drop because we have not yet implemented the batching rule for "
                      f"{name}. ember.func.vmap runs it as a loop over the examples.", UserWarning, stacklevel=3)
    if name.endswith("_") and args and not is_batched_at(args[0], level):
        raise RuntimeError(f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor `other` "
                           "in extra_args that has more elements than `self`. This happened due to `other` being "
                           "vmapped over but `self` not being vmapped over in a vmap.")
    n = batch_size(level)
    outs = [front(*_select(args, level, i), **{k: _select(v, level, i) for k, v in kwargs.items()})
            for i in range(n)]
    if name.endswith("_") and args:
        return args[0]  # each example was written in place through a view of the value
    first = outs[0]
    if isinstance(first, Tensor):
        return wrap(_stack(outs), level)
    if isinstance(first, (tuple, list)):
        res = [wrap(_stack([o[j] for o in outs]), level) if isinstance(first[j], Tensor) else first[j]
               for j in range(len(first))]
        return type(first)(res) if type(first) in (tuple, list) else type(first)(*res)
    raise RuntimeError(f"vmap: the fallback for {name} can't batch a result of type {type(first).__name__}")


def _stack(ts):
    return ops.stack(ts, 0)


def _binop(fn, reflected=False):
    def method(self, other):
        return fn(other, self) if reflected else fn(self, other)
    return method


def _install_operators():
    T = BatchedTensor
    T.__add__ = _binop(ops.add)
    T.__radd__ = _binop(ops.add, True)
    T.__sub__ = _binop(ops.sub)
    T.__rsub__ = lambda self, other: ops.rsub(self, other)
    T.__mul__ = _binop(ops.mul)
    T.__rmul__ = _binop(ops.mul, True)
    T.__truediv__ = _binop(ops.div)
    T.__rtruediv__ = lambda self, other: (ops.div(other, self) if isinstance(other, Tensor)
                                          else ops.mul(ops.reciprocal(self), other))
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        setattr(T, f"__{name}__", _binop(getattr(ops, name)))
    for name in ("and", "or", "xor"):
        fn = getattr(ops, f"bitwise_{name}")
        setattr(T, f"__{name}__", _binop(fn))
        setattr(T, f"__r{name}__", _binop(fn, True))
    T.__hash__ = lambda self: id(self)


_install_operators()
