"""The hook-based ``nn.utils.weight_norm`` and ``remove_weight_norm`` (deprecated in PyTorch in
favour of ``nn.utils.parametrizations.weight_norm``).

The parameter ``<name>`` is split into a magnitude ``<name>_g`` and a direction ``<name>_v``;
a forward pre-hook rebuilds ``<name> = <name>_g * <name>_v / ||<name>_v||`` before each forward,
the norm taken over every axis but ``dim`` (over the whole tensor for ``dim=None``).
"""
from __future__ import annotations

import warnings

from ..parameter import Parameter, is_lazy
from .parametrizations import _norm_except_dim

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]

_DEPRECATION = ("`torch.nn.utils.weight_norm` is deprecated in favor of "
                "`torch.nn.utils.parametrizations.weight_norm`.")


def _installed(module, name):
    """The key of the :class:`WeightNorm` pre-hook of ``module`` acting on ``name``, or None."""
    return next((key for key, hook in module._forward_pre_hooks.items()
                 if isinstance(hook, WeightNorm) and hook.name == name), None)


class WeightNorm:
    """The forward pre-hook that rebuilds ``module.<name>`` from its magnitude and direction."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = dim if dim is not None else -1  # -1: one norm for the whole tensor

    def compute_weight(self, module):
        """``<name>_g * <name>_v / ||<name>_v||``."""
        magnitude = getattr(module, f"{self.name}_g")
        direction = getattr(module, f"{self.name}_v")
        return direction * (magnitude / _norm_except_dim(direction, self.dim))

    @staticmethod
    def apply(module, name: str, dim: int) -> "WeightNorm":
        """Split ``module.<name>`` into ``<name>_g`` and ``<name>_v`` and install the hook."""
        warnings.warn(_DEPRECATION, FutureWarning, stacklevel=3)
        if _installed(module, name) is not None:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        hook = WeightNorm(name, dim)
        current = getattr(module, name)
        if is_lazy(current):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. Make sure to run "
                             "the dummy forward before applying weight normalization")
        module._parameters.pop(name)
        magnitude = _norm_except_dim(current, hook.dim).detach()
        module.register_parameter(f"{name}_g", Parameter(magnitude))
        module.register_parameter(f"{name}_v", Parameter(current.detach()))
        hook(module, None)
        module.register_forward_pre_hook(hook)
        return hook

    def remove(self, module) -> None:
        """Fold ``<name>_g`` and ``<name>_v`` back into a plain parameter ``<name>``."""
        merged = self.compute_weight(module)
        delattr(module, self.name)
        for part in ("_g", "_v"):
            module._parameters.pop(self.name + part)
        setattr(module, self.name, Parameter(merged.detach()))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim: int = 0):
    """Reparametrise ``module.<name>`` as magnitude times direction (see the module docstring);
    returns ``module``."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Undo :func:`weight_norm`: ``<name>`` is an ordinary parameter with its current value."""
    key = _installed(module, name)
    if key is None:
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    module._forward_pre_hooks.pop(key).remove(module)
    return module
