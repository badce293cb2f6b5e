"""``nn.utils.prune``: mask-based pruning with PyTorch's API.

Pruning ``module.<name>`` renames the parameter to ``<name>_orig``, adds a buffer
``<name>_mask`` and installs the pruning method as a forward pre-hook; before each forward the
hook writes ``<name>_orig * <name>_mask`` into the plain attribute ``module.<name>``. A second
pruning of the same tensor wraps both methods in a :class:`PruningContainer`, whose newest
method only sees the entries (or channels) that survived so far. :func:`remove` bakes the
current product into an ordinary parameter again.
"""
from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ... import ops as _ops
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured", "l1_unstructured",
           "random_structured", "ln_structured", "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


# --- amounts and argument checks ------------------------------------------------------------

def _checked_amount(amount):
    """Accept a fraction in [0, 1] or a count >= 0, as the constructors do."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    counted = isinstance(amount, numbers.Integral)
    if amount < 0 if counted else (float(amount) < 0.0 or float(amount) > 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")
    return amount


def _count_to_drop(amount, available):
    """How many of ``available`` items ``amount`` removes (a count, or a rounded fraction)."""
    if not isinstance(amount, numbers.Integral):
        return round(amount * available)
    if amount > available:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={available}")
    return amount


def _check_channels(t, dim) -> None:
    if len(t.shape) < 2:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
                         f"{t.shape} with {len(t.shape)} dims")
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _scores_or_self(t, scores, what):
    """The tensor the mask is computed from: ``scores`` if given (same shape as ``t``), else ``t``."""
    if scores is None:
        return t
    if scores.shape != t.shape:
        raise AssertionError(f"importance_scores should have the same shape as {what}, got {scores.shape} vs "
                             f"{t.shape}")
    return scores


# --- mask building blocks --------------------------------------------------------------------

def _zero_at(default_mask, flat_positions):
    """A copy of ``default_mask`` with the entries at ``flat_positions`` (row-major) set to 0."""
    flat = default_mask.flatten().clone()
    flat[flat_positions] = 0
    return flat.reshape(default_mask.shape)


def _along(ndim, dim, index):
    """An indexing key that applies ``index`` on axis ``dim`` and takes everything elsewhere."""
    key = [slice(None)] * ndim
    key[dim] = index
    return tuple(key)


def _keep_channels(t, dim, which, default_mask):
    """Ones on the channels ``which`` of axis ``dim`` (zeros elsewhere), times ``default_mask``."""
    out = _ops.zeros_like(t)
    out[_along(t.dim(), dim, which)] = 1
    out *= default_mask.to(dtype=out.dtype)
    return out


def _channel_norms(t, p, dim):
    """The ``p``-norm of every slice of ``t`` along ``dim``."""
    axis = dim % t.dim()
    return _ops.norm(t, p=p, dim=[d for d in range(t.dim()) if d != axis])


def _surviving(method, t, mask):
    """The part of ``t`` that ``method`` may still prune given the current ``mask``."""
    kind = method.PRUNING_TYPE
    if kind == "unstructured":
        return mask == 1
    if kind == "global" or (kind == "structured" and t.dim() < 2):
        return (slice(None),) * t.dim()
    if kind != "structured":
        raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
    try:
        axis = method.dim
    except AttributeError:
        raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` '
                             "defined.") from None
    if axis < 0:
        axis += t.dim()
    if axis < 0:
        raise IndexError(f"Index is out of bounds for tensor with dimensions {t.dim()}")
    others = [d for d in range(t.dim()) if d != axis]
    alive = mask.sum(dim=others) != 0
    return _along(t.dim(), axis, alive)


# --- hooks on a module ------------------------------------------------------------------------

def _hooks_for(module, name):
    """``(key, method)`` for each pruning pre-hook of ``module`` that acts on ``name``."""
    return [(key, hook) for key, hook in module._forward_pre_hooks.items()
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]


def _target(method, module, then=""):
    """The name of the tensor ``method`` prunes; AssertionError if it was never installed."""
    name = getattr(method, "_tensor_name", None)
    if name is None:
        raise AssertionError(f"Module {module} has to be pruned{then}")
    return name


def _combine(earlier, newest):
    """``earlier`` followed by ``newest``, as one container."""
    if isinstance(earlier, PruningContainer):
        earlier.add_pruning_method(newest)
        return earlier
    both = PruningContainer(earlier)
    both.add_pruning_method(newest)
    return both


class BasePruningMethod(ABC):
    """The interface of a pruning method.

    A subclass sets ``PRUNING_TYPE`` to ``"unstructured"`` (entries), ``"structured"`` (whole
    slices along its ``dim``) or ``"global"`` (the whole tensor at once), and implements
    ``compute_mask(t, default_mask)``. An installed method is also the forward pre-hook that
    refreshes the pruned attribute.
    """

    _tensor_name: str = None

    def __call__(self, module, inputs):
        # the forward pre-hook: refresh the pruned attribute from ``_orig`` and ``_mask``
        pruned = self.apply_mask(module)
        setattr(module, self._tensor_name, pruned)

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """Return the new mask for ``t``, starting from (and never reviving) ``default_mask``."""

    def apply_mask(self, module):
        """``<name>_orig`` with the entries masked out by ``<name>_mask`` set to zero."""
        name = _target(self, module)
        original = getattr(module, name + "_orig")
        return original * getattr(module, name + "_mask").to(dtype=original.dtype)

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)`` and return the installed method
        (a :class:`PruningContainer` when the tensor was pruned before)."""
        current = getattr(module, name)
        scores = _scores_or_self(current, importance_scores, f"parameter {name} of {module}")
        installed = _hooks_for(module, name)
        if len(installed) > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                                 "Use a PruningContainer.")
        newest = cls(*args, **kwargs)
        newest._tensor_name = name
        first = not installed
        if first:
            method = newest
            module.register_parameter(name + "_orig", module._parameters.pop(name))
            start = _ops.ones_like(current)
        else:
            key, earlier = installed[0]
            del module._forward_pre_hooks[key]
            method = _combine(earlier, newest)
            start = getattr(module, name + "_mask").detach().clone()
        try:
            module.register_buffer(name + "_mask", method.compute_mask(scores, default_mask=start))
            method(module, None)  # sets module.<name> as the hook will before each forward
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # put the parameter back where it was
                module.register_parameter(name, module._parameters.pop(name + "_orig"))
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` multiplied by the mask this method computes (the module is not involved)."""
        scores = _scores_or_self(t, importance_scores, "tensor t")
        start = _ops.ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(scores, default_mask=start)

    def remove(self, module) -> None:
        """Turn the pruned tensor into a plain parameter ``<name>`` and drop ``_orig``/``_mask``."""
        name = _target(self, module, " before pruning can be removed")
        pruned = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        param = module._parameters.pop(name + "_orig")
        module._buffers.pop(name + "_mask")
        param.data = pruned.data
        setattr(module, name, param)


class PruningContainer(BasePruningMethod):
    """Several pruning methods of one tensor, applied in order; the mask of the newest one is
    computed only over what the earlier ones left."""

    def __init__(self, *args) -> None:
        self._pruning_methods = ()
        if len(args) == 1:  # a container made around one method acts on that method's tensor
            (single,) = args
            self._tensor_name = single._tensor_name
        for each in args:
            self.add_pruning_method(each)

    def add_pruning_method(self, method) -> None:
        if method is not None:
            if not isinstance(method, BasePruningMethod):
                raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
            if method._tensor_name != self._tensor_name:
                raise ValueError("Can only add pruning methods acting on the parameter named "
                                 f"'{self._tensor_name}' to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods = (*self._pruning_methods, method)

    def __iter__(self):
        yield from self._pruning_methods

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def compute_mask(self, t, default_mask):
        newest = self._pruning_methods[-1]
        region = _surviving(newest, t, default_mask)
        part = newest.compute_mask(t[region], default_mask=default_mask[region])
        combined = default_mask.to(dtype=t.dtype).clone()
        combined[region] = part.to(dtype=combined.dtype)
        return combined


class Identity(BasePruningMethod):
    """Keeps everything: the mask stays as it is."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Masks ``amount`` (fraction or count) of the entries, picked uniformly at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        self.amount = _checked_amount(amount)

    def compute_mask(self, t, default_mask):
        k = _count_to_drop(self.amount, t.nelement())
        if k == 0:
            return default_mask.clone()
        draw = _ops.rand_like(t).reshape(-1)
        return _zero_at(default_mask, _ops.topk(draw, k=k).indices)

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Masks ``amount`` (fraction or count) of the entries: those of smallest magnitude."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        self.amount = _checked_amount(amount)

    def compute_mask(self, t, default_mask):
        k = _count_to_drop(self.amount, t.nelement())
        if k == 0:
            return default_mask.clone()
        smallest = _ops.topk(_ops.abs(t).reshape(-1), k=k, largest=False).indices
        return _zero_at(default_mask, smallest)

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Masks ``amount`` of the slices along ``dim``, picked uniformly at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1) -> None:
        self.amount = _checked_amount(amount)
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _check_channels(t, self.dim)
        channels = t.shape[self.dim]
        k = _count_to_drop(self.amount, channels)
        if k == 0:
            return default_mask
        draw = _ops.rand(channels)
        cut = _ops.kthvalue(draw, k=k).values  # the k draws at or below the cut are dropped
        return _keep_channels(t, self.dim, draw > cut, default_mask)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Masks ``amount`` of the slices along ``dim``: those of smallest ``n``-norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1) -> None:
        self.amount = _checked_amount(amount)
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _check_channels(t, self.dim)
        channels = t.shape[self.dim]
        k = _count_to_drop(self.amount, channels)
        if k == 0:
            return default_mask
        strongest = _ops.topk(_channel_norms(t, self.n, self.dim), k=channels - k, largest=True).indices
        return _keep_channels(t, self.dim, strongest, default_mask)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Masks with a mask given by the user (combined with the existing one)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask) -> None:
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if self.mask.shape != default_mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return self.mask.to(dtype=default_mask.dtype) * default_mask

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


# --- functional forms ---------------------------------------------------------------------------

def _pruned_with(method_class, module, *args, **kwargs):
    method_class.apply(module, *args, **kwargs)
    return module


def identity(module, name):
    """Install an :class:`Identity` pruning on ``module.<name>``; returns ``module``."""
    return _pruned_with(Identity, module, name)


def random_unstructured(module, name, amount):
    """Prune ``amount`` random entries of ``module.<name>``; returns ``module``."""
    return _pruned_with(RandomUnstructured, module, name, amount)


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the ``amount`` entries of ``module.<name>`` of smallest magnitude; returns ``module``."""
    return _pruned_with(L1Unstructured, module, name, amount=amount, importance_scores=importance_scores)


def random_structured(module, name, amount, dim):
    """Prune ``amount`` random slices along ``dim`` of ``module.<name>``; returns ``module``."""
    return _pruned_with(RandomStructured, module, name, amount, dim)


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the ``amount`` slices along ``dim`` of smallest ``n``-norm; returns ``module``."""
    return _pruned_with(LnStructured, module, name, amount, n, dim, importance_scores=importance_scores)


def custom_from_mask(module, name, mask):
    """Prune ``module.<name>`` with ``mask``; returns ``module``."""
    return _pruned_with(CustomFromMask, module, name, mask)


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prune the ``(module, name)`` pairs of ``parameters`` jointly: the unstructured
    ``pruning_method(**kwargs)`` sees all of them as one flat vector, and each tensor then gets
    its slice of the resulting mask through :class:`CustomFromMask`."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    if importance_scores is None:
        importance_scores = {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    pairs = list(parameters)
    tensors = [getattr(m, n) for m, n in pairs]
    scores = parameters_to_vector([importance_scores.get((m, n), t) for (m, n), t in zip(pairs, tensors)])
    masks = parameters_to_vector([_mask_or_ones(m, n, t) for (m, n), t in zip(pairs, tensors)])
    chosen = pruning_method(**kwargs)
    if chosen.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {chosen.PRUNING_TYPE}")
    chosen._tensor_name = "temp"
    joint = PruningContainer(chosen)
    flat_mask = joint.compute_mask(scores, masks)
    start = 0
    for (module, name), t in zip(pairs, tensors):
        stop = start + t.numel()
        custom_from_mask(module, name, mask=flat_mask[start:stop].view_as(t))
        start = stop


def _mask_or_ones(module, name, t):
    found = getattr(module, name + "_mask", None)
    return _ops.ones_like(t) if found is None else found


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent and uninstall its hook."""
    for key, method in _hooks_for(module, name):
        method.remove(module)
        del module._forward_pre_hooks[key]
        return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module) -> bool:
    """Whether ``module`` or any of its submodules carries a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, sub in module.named_modules() for hook in sub._forward_pre_hooks.values())
