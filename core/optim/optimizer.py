"""The optimizer base class: parameter groups, per-parameter state, step hooks and state dicts.

Layout and behaviour follow ``torch.optim.Optimizer`` so that a checkpoint moves one to one
between ember and PyTorch: ``state_dict()`` returns ``{"state": {index: {...}}, "param_groups":
[{..., "params": [indices]}]}`` with per-parameter state as tensors (``step`` is a 0-d tensor on
the host). Where ember does better than PyTorch:

* ``load_state_dict`` copies every tensor it loads, so two optimizers never share state by
  accident (PyTorch aliases tensors whose dtype and device already match), and refuses per-element
  state whose shape does not match its parameter instead of broadcasting it later;
* a parameter listed twice in one group is refused (PyTorch warns and then updates it twice);
* hyperparameters given per group are validated like the constructor's.
"""
from __future__ import annotations

import functools
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain
from typing import Any, Callable, Iterable

from .. import _devices, _hoststep
from .. import _dtype as D
from .._graph import RemovableHandle
from .._tensor import Tensor
from .._toplevel import typename
from ..autograd import enable_grad, is_grad_enabled, set_grad_enabled
from ..ops.creation import tensor, zeros_like
from ..ops.optim import FUSED
from ..ops.registry import dispatch

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

StateDict = dict
ParamsT = Iterable


class _RequiredParameter:
    """Marks a hyperparameter that every parameter group must give (no default)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_optimizer_pre_hooks: OrderedDict = OrderedDict()
_global_optimizer_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs) -> None | (args, kwargs)``, run before the step of
    every optimizer (before the optimizer's own pre hooks)."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs) -> None``, run after the step of every optimizer
    (after the optimizer's own post hooks)."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def _hooked_step(func):
    """Wrap a ``step`` implementation with the global and per-optimizer pre/post hooks. A step that
    calls ``super().step()`` runs the hooks once (the outermost call)."""
    @functools.wraps(func)
    def step(self, *args, **kwargs):
        if self.__dict__.get("_in_step"):
            return func(self, *args, **kwargs)
        rec = _hoststep.recorder[0]
        if rec is not None and not rec.depth:
            return _recorded_step(rec, self, hooked, args, kwargs)
        return hooked(self, *args, **kwargs)

    def hooked(self, *args, **kwargs):
        self._in_step = True
        try:
            own = self.__dict__  # (a wrapper that never called Optimizer.__init__ has no hooks of its own)
            pre = own.get("_optimizer_step_pre_hooks", {})
            for pre_hook in chain(_global_optimizer_pre_hooks.values(), pre.values()):
                result = pre_hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(f"{func} must return None or a tuple of (new_args, new_kwargs), but got "
                                           f"{result}.")
            out = func(self, *args, **kwargs)
            post = own.get("_optimizer_step_post_hooks", {})
            for post_hook in chain(post.values(), _global_optimizer_post_hooks.values()):
                post_hook(self, args, kwargs)
            return out
        finally:
            self._in_step = False
    step.hooked = True
    return step


def _recorded_step(rec, opt, run, args, kwargs):
    """An optimizer step inside a call ``ember.compile`` records: the update's kernel calls are
    recorded like any others, and the recording gets a guard that the optimizer is as it was (the
    hyperparameters the kernels got as python numbers, the parameter lists, each state entry: the
    same tensor object, or an equal python value), so that a changed learning rate or a loaded
    state dict captures again instead of replaying stale numbers. A step that creates state (the
    first step) makes the next call capture again; one that replaces its state tensors, or that
    has step hooks or a closure, is a break."""
    name = type(opt).__name__
    own = opt.__dict__
    if (args and args[0] is not None) or kwargs.get("closure") is not None:
        rec.brk(f"{name}.step with a closure inside the compiled call")
    if (_global_optimizer_pre_hooks or _global_optimizer_post_hooks or own.get("_optimizer_step_pre_hooks")
            or own.get("_optimizer_step_post_hooks")):
        rec.brk(f"{name}.step has step hooks (python code the replay would not run)")
    groups = [(g, {k: v for k, v in g.items() if k != "params"}, list(g["params"])) for g in opt.param_groups]
    state = {id(p): (st, dict(st)) for p, st in opt.state.items()}
    out = run(opt, *args, **kwargs)
    for p, st in opt.state.items():
        before = state.get(id(p))
        if before is None or before[1].keys() != st.keys():
            rec.retry(f"{name}.step created its state (a first step); the next call captures")
            return out
        for k, v in st.items():
            if isinstance(v, Tensor) and before[1][k] is not v:
                rec.brk(f"{name}.step replaces its state tensor {k!r} instead of updating it in place")
                return out
    rec.add_guard(_optimizer_guard(opt, groups, state))
    return out


def _optimizer_guard(opt, groups, state):
    """A function checking that ``opt`` still has the groups and state snapshot before a step."""
    def same(a, b):
        return a is b or (not isinstance(a, Tensor) and not isinstance(b, Tensor) and type(a) is type(b) and a == b)

    def guard() -> bool:
        if len(opt.param_groups) != len(groups) or len(opt.state) != len(state):
            return False
        for (g, hyper, params), now in zip(groups, opt.param_groups):
            ps = g["params"]
            if now is not g or len(g) != len(hyper) + 1 or len(ps) != len(params) or \
                    any(a is not b for a, b in zip(ps, params)):
                return False
            for k, v in hyper.items():
                if not same(g.get(k, _missing), v):
                    return False
        for p, st in opt.state.items():
            before = state.get(id(p))
            if before is None or before[0] is not st or len(st) != len(before[1]):
                return False
            for k, v in before[1].items():
                if not same(st.get(k, _missing), v):
                    return False
        return True
    return guard


_missing = object()


def _use_grad(func):
    """Run ``step`` with grad mode set to the optimizer's ``differentiable`` default (off unless
    the user asked to differentiate through the update)."""
    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        prev = is_grad_enabled()
        try:
            set_grad_enabled(self.defaults.get("differentiable", False))
            return func(self, *args, **kwargs)
        finally:
            set_grad_enabled(prev)
    return wrapper


def _get_scalar_dtype():
    """The dtype of scalar state such as ``step``: float64 when that is the default dtype, else
    float32 (as PyTorch)."""
    return D.float64 if D.get_default_dtype() is D.float64 else D.float32


def _host_device(p: Tensor):
    """Where scalar state lives: the host (PyTorch keeps ``step`` on the cpu to avoid device
    syncs), or the parameter's own device when no cpu backend is installed."""
    if p._device._type == "cpu":
        return p._device
    try:
        return _devices.cpu()
    except RuntimeError:
        return p._device


def _scalar_state(value: float, p: Tensor) -> Tensor:
    return tensor(float(value), dtype=_get_scalar_dtype(), device=_host_device(p))


def _step0(p: Tensor) -> Tensor:
    """The first value of a parameter's ``step`` state."""
    return _scalar_state(0.0, p)


def _zeros(p: Tensor) -> Tensor:
    """A zero buffer shaped like ``p`` (first value of moment estimates)."""
    return zeros_like(p).detach()


def _to_float(x):
    """A hyperparameter as a python number (a 1-element tensor ``lr`` is read once per step)."""
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise ValueError(f"Tensor hyperparameter must be 1-element, got shape {list(x.shape)}")
        return x.item()
    return x


def _check_fused(name: str, fused, foreach, differentiable) -> None:
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


class Optimizer:
    """Base class of all optimizers.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (parameter
    groups, each with ``"params"`` and any per-group option); ``defaults`` holds the options a
    group does not give. Subclasses implement :meth:`step` (usually decorated with nothing: the
    hooks are added automatically) and may define ``_validate(group)`` to check hyperparameters
    and ``_state_shape_keys`` (state entries shaped like their parameter). A wrapper that shares
    another optimizer's groups instead of calling ``Optimizer.__init__`` calls ``self._init_hooks()``
    so that hooks can be registered on it; an override of ``state_dict``/``load_state_dict`` runs
    the hooks in ``_optimizer_state_dict_pre_hooks`` / ``_post_hooks`` and
    ``_optimizer_load_state_dict_pre_hooks`` / ``_post_hooks`` (PyTorch's names) as the base does.

    Example::

        opt = ember.optim.SGD([{"params": base.parameters()},
                               {"params": head.parameters(), "lr": 1e-3}], lr=1e-2, momentum=0.9)
        opt.zero_grad(); loss.backward(); opt.step()
    """

    #: state entries with the shape of their parameter (checked by ``load_state_dict``)
    _state_shape_keys: tuple = ()
    #: state entries that are 0-d tensors (numbers in old checkpoints are converted)
    _scalar_state_keys: tuple = ("step",)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "hooked", False):
            cls.step = _hooked_step(step)

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        validate = getattr(self, "_validate", None)
        if validate is not None:
            validate(defaults)
        self.defaults = defaults
        self._init_hooks()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            "got " + typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        given = list(params)
        if not given:
            raise ValueError("optimizer got an empty parameter list")
        # dicts are groups of their own; plain tensors make one group with the defaults
        for group in given if isinstance(given[0], dict) else [{"params": given}]:
            self.add_param_group(group)

    def _init_hooks(self) -> None:
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())

    # -- pickling ---------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_hooks()
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for k, v in self.defaults.items():
                if k != "params" and v is not required:
                    group.setdefault(k, v)
            for p in group["params"]:
                st = self.state.get(p)
                if not st:
                    continue
                for key in self._scalar_state_keys:
                    v = st.get(key)
                    if v is None:
                        continue
                    if not isinstance(v, Tensor):
                        st[key] = _scalar_state(v, p)
                    elif v.dim() != 0 and v.numel() == 1:
                        st[key] = v.reshape(())

    def __repr__(self) -> str:
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    # -- hooks ------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None | (new_args, new_kwargs)``, run before each step."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None``, run after each step."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def _add_hook(self, table: OrderedDict, hook, prepend: bool) -> RemovableHandle:
        handle = RemovableHandle(table)
        table[handle.id] = hook
        if prepend:
            table.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer) -> None``, run before :meth:`state_dict`."""
        return self._add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> state_dict | None``, run after :meth:`state_dict`."""
        return self._add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> state_dict | None``, run before :meth:`load_state_dict`."""
        return self._add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer) -> None``, run after :meth:`load_state_dict`."""
        return self._add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # -- state dicts ------------------------------------------------------------------------
    def state_dict(self) -> StateDict:
        """The optimizer's state: ``{"state": {param index: {name: value}}, "param_groups": [...]}``,
        indices numbering the parameters across groups in order (PyTorch's layout). Tensors are
        the live state, not copies."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings: dict[int, int] = {}
        start = 0

        def pack_group(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def _load_value(self, param: Tensor, value, key, index):
        """A copy of a loaded state value, placed like ``param`` (floating state takes the
        parameter's dtype; ``step`` and other scalar state stay on the host in their dtype)."""
        if isinstance(value, Tensor):
            if key in self._scalar_state_keys:
                if value.numel() != 1:
                    raise ValueError(f"{type(self).__name__}.load_state_dict: state '{key}' of parameter {index} must "
                                     f"be a number or a 1-element tensor, got shape {list(value.shape)}")
                # 0-d, whatever shape a 1-element value was saved with
                return value.detach().reshape(()).to(device=_host_device(param)).clone()
            if key in self._state_shape_keys and tuple(value.shape) != tuple(param.shape):
                raise ValueError(
                    f"{type(self).__name__}.load_state_dict: state '{key}' of parameter {index} has shape "
                    f"{list(value.shape)} but the parameter has shape {list(param.shape)}")
            if value.is_floating_point() and param.is_floating_point():
                return value.detach().to(dtype=param.dtype, device=param.device).clone()
            return value.detach().to(device=param.device).clone()
        if isinstance(value, dict):
            return {k: self._load_value(param, v, k, index) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self._load_value(param, v, None, index) for v in value)
        if key in self._scalar_state_keys and isinstance(value, (int, float)):
            return _scalar_state(value, param)
        return deepcopy(value)

    def load_state_dict(self, state_dict: StateDict) -> None:
        """Load a state dict made by :meth:`state_dict` (of ember or PyTorch): groups and parameters
        are matched by position; hyperparameters come from the state dict."""
        state_dict = dict(state_dict)
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        for key in ("state", "param_groups"):
            if key not in state_dict:
                raise ValueError(f"{type(self).__name__}.load_state_dict: the state dict has no '{key}' entry "
                                 f"(keys: {sorted(map(str, state_dict))})")
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of optimizer's "
                             "group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = {sk: self._load_value(param, sv, sk, k) for sk, sv in v.items()}
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # -- the training loop ------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors: to ``None`` (the default), or to zeros.
        Optimizers skip parameters whose gradient is None, but step with a zero gradient."""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    p._grad = None  # (written without reading it first: a compiled step then needs no guard on it)
                    continue
                g = p._grad
                if g is None:
                    continue
                if g._grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def step(self, closure: Callable[[], Any] | None = None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        raise NotImplementedError

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (a dict with ``"params"`` and per-group options), e.g. to
        start training layers that were frozen."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        validate = getattr(self, "_validate", None)
        if validate is not None:
            validate(param_group)
        ids = [id(p) for p in tensors]
        if len(ids) != len(set(ids)):
            # PyTorch only warns, then updates such a parameter twice per step
            raise ValueError("optimizer contains a parameter group with duplicate parameters; each parameter may be "
                             "listed once (PyTorch would update it twice per step)")
        seen: set = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError(f"all optimizer param groups should be with/without names. cannot add param group "
                                 f"{txt} to the optimizer")
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # -- helpers for subclasses ---------------------------------------------------------------
    def _closure_loss(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def _gather(self, group: dict, init: dict) -> tuple:
        """The group's parameters that have a gradient, their gradients, and for each state name
        of ``init`` (name -> ``fn(p)`` making its first value; state is created on a parameter's
        first step, in ``init``'s order) the list of that state over those parameters."""
        params, grads = [], []
        lists = {name: [] for name in init}
        for p in group["params"]:
            if p.grad is None:
                continue
            params.append(p)
            grads.append(self._dense_grad(p.grad, group))
            state = self.state[p]
            if len(state) == 0:
                for name, make in init.items():
                    state[name] = make(p)
            for name, lst in lists.items():
                lst.append(state[name])
        return params, grads, lists

    _sparse_grad_error = None

    def _dense_grad(self, g: Tensor, group: dict) -> Tensor:
        """``g``, refused when sparse (``nn.Embedding(sparse=True)``) with PyTorch's message; SGD and
        Adagrad, which take sparse gradients, override this."""
        if g.is_sparse:
            raise RuntimeError(self._sparse_grad_error or f"{type(self).__name__} does not support sparse gradients")
        return g

    def _update(self, name: str, group: dict, tensor_lists: tuple, *scalars) -> None:
        """Run the update op ``_fused_<name>_`` (see :mod:`ember.ops.optim`) on one group's lists.

        With ``fused`` or ``foreach`` True, or both None (the default), the op is dispatched per
        device: a backend's native fused kernel runs when it has one, else the op's decomposition.
        With ``fused=False``/``foreach=False`` (and always when ``differentiable``) the plain
        per-tensor ember-op implementation runs directly."""
        op = FUSED[name]
        scalars = tuple(_to_float(s) if not group.get("differentiable") else s for s in scalars)
        fused, foreach = group.get("fused"), group.get("foreach")
        if group.get("differentiable") or not (fused or foreach or (fused is None and foreach is None)):
            op.decomposition(*tensor_lists, *scalars)
            return
        params = tensor_lists[0]
        dev = params[0]._device
        if all(p._device is dev for p in params):
            dispatch(op, dev, tuple(tensor_lists) + scalars, ())
            return
        n = len(params)
        for d in dict.fromkeys(p._device for p in params):
            idx = [i for i, p in enumerate(params) if p._device is d]
            lists = tuple([lst[i] for i in idx] if len(lst) == n else lst for lst in tensor_lists)
            dispatch(op, d, lists + scalars, ())
