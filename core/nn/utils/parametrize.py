"""``nn.utils.parametrize``: express a module's tensor as a function of other ("original")
tensors. ``register_parametrization(m, "weight", P)`` moves ``m.weight`` to
``m.parametrizations.weight.original`` and makes ``m.weight`` compute ``P(original)`` on every
access, as PyTorch does (same class names, attribute layout and state-dict keys)."""
from __future__ import annotations

from contextlib import contextmanager

from ... import _state
from ..._tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "cached",
           "type_before_parametrizations", "transfer_parametrizations_and_params", "ParametrizationList"]

_cache_enabled = 0  # how many ``cached()`` blocks are open (they nest)
_cache: dict = {}


def _cache_depth(change: int) -> int:
    global _cache_enabled
    _cache_enabled += change
    return _cache_enabled


@contextmanager
def cached():
    """Inside the block, each parametrized tensor is computed once and reused."""
    _cache_depth(+1)
    try:
        yield
    finally:
        if _cache_depth(-1) == 0:  # the outermost block ends: forget the values
            _cache.clear()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor (children ``0``, ``1``...) and its ``original`` tensor(s)."""

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        with _state.grad_disabled():
            new = original
            for m in reversed(self):
                if hasattr(m, "right_inverse"):
                    new = m.right_inverse(new)
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            with _state.grad_disabled():
                if tuple(new.shape) == tuple(original.shape):
                    original.copy_(new)
                    kept = original
                else:
                    kept = new
            self._register(kept, "original", original)
        else:
            for i, t in enumerate(new):
                if not isinstance(t, Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                     f"Got element {i} of the sequence with type {type(t).__name__}.")
                self._register(t.detach().clone(), f"original{i}", original)

    def _register(self, t, name, original):
        if isinstance(original, Parameter):
            p = t if isinstance(t, Parameter) and t is original else Parameter(t, original.requires_grad)
            self.register_parameter(name, p)
        else:
            self.register_buffer(name, t)

    def right_inverse(self, value: Tensor) -> None:
        """Set the originals so that the parametrized tensor becomes ``value``."""
        with _state.grad_disabled():
            for m in reversed(self):
                if hasattr(m, "right_inverse"):
                    value = m.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(m).__name__} does not implement right_inverse.")
            if self.is_tensor:
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by right_inverse has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                self.original.copy_(value)
            else:
                for i, t in enumerate(value):
                    getattr(self, f"original{i}").copy_(t)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in list(self)[1:]:
            x = m(x)
        return x


def _inject_new_class(module: Module) -> None:
    cls = module.__class__

    def getstate(self):
        raise RuntimeError("Serialization of parametrized modules is only supported through state_dict().")
    param_cls = type(f"Parametrized{cls.__name__}", (cls,), {"__getstate__": getstate})
    module.__class__ = param_cls


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self):
        p = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            t = _cache.get(key)
            if t is None:
                t = _cache[key] = p()
            return t
        return p()

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)
    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` (or its ``tensor_name``) has a parametrization."""
    ps = module.__dict__.get("_modules", {}).get("parametrizations")
    if ps is None or not isinstance(ps, ModuleDict):
        return False
    return len(ps) > 0 if tensor_name is None else tensor_name in ps


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Parametrize ``module.<tensor_name>`` by ``parametrization`` (a Module); several may be stacked."""
    if not isinstance(parametrization, Module):
        raise TypeError(f"parametrization must be an nn.Module, got {type(parametrization).__name__}")
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if not isinstance(X, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(X).__name__}.")
            if X.dtype != Y.dtype or tuple(X.shape) != tuple(Y.shape):
                raise ValueError(f"Registering a parametrization may not change the shape or dtype of the tensor "
                                 f"(got {X.dtype}{list(X.shape)} for {Y.dtype}{list(Y.shape)})")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
        return module
    if tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        if not unsafe:
            X = parametrization(original)
            if not isinstance(X, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(X).__name__}.")
            if X.dtype != original.dtype or tuple(X.shape) != tuple(original.shape):
                raise ValueError(f"Registering a parametrization may not change the shape or dtype of the tensor "
                                 f"(got {X.dtype}{list(X.shape)} for {original.dtype}{list(original.shape)})")
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
        return module
    raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name "
                     f"'{tensor_name}'")


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo ``register_parametrization``; the tensor keeps its current (parametrized) value by
    default, else its ``original``."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with _state.grad_disabled():
                t = getattr(module, tensor_name)
            with _state.grad_disabled():
                if tuple(t.shape) == tuple(original.shape) and t.dtype == original.dtype:
                    original.copy_(t)
                else:
                    original = Parameter(t.detach(), original.requires_grad) if isinstance(original, Parameter) \
                        else t.detach()
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized "
                             "in terms of a sequence of tensors.")
        with _state.grad_disabled():
            t = getattr(module, tensor_name)
        any_param = any(isinstance(getattr(plist, f"original{i}"), Parameter) for i in range(plist.ntensors))
        original = Parameter(t.detach(), True) if any_param else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before parametrizations were registered."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module, tensor_name: str | None = None):
    """Copy the parametrizations (and their originals) of ``from_module`` onto ``to_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name) and name not in to_module._parameters:
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        for p in from_module.parametrizations[name]:
            register_parametrization(to_module, name, p)
        with _state.grad_disabled():
            src = from_module.parametrizations[name]
            dst = to_module.parametrizations[name]
            if src.is_tensor:
                dst.original.copy_(src.original)
            else:
                for i in range(src.ntensors):
                    getattr(dst, f"original{i}").copy_(getattr(src, f"original{i}"))
    return to_module
