"""The hook-based ``nn.utils.spectral_norm`` and ``remove_spectral_norm``, which PyTorch keeps
beside ``nn.utils.parametrizations.spectral_norm``.

The parameter ``<name>`` is replaced by ``<name>_orig`` and two buffers, ``<name>_u`` and
``<name>_v``: estimates of the leading left and right singular vectors of the weight seen as a
matrix. Before each forward a pre-hook divides ``<name>_orig`` by the estimated largest singular
value, refining the estimate by power iteration first when the module is training. A state-dict
hook records the layout's version in the metadata, and a load pre-hook checks older layouts.
"""
from __future__ import annotations

from ... import _state
from ... import ops as _ops
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..parameter import Parameter, is_lazy

__all__ = ["SpectralNorm", "SpectralNormLoadStateDictPreHook", "SpectralNormStateDictHook", "spectral_norm",
           "remove_spectral_norm"]

_TRANSPOSED = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)


def _hook_key(module, name):
    """The key of the :class:`SpectralNorm` pre-hook acting on ``name``, or None."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            return key
    return None


def _unit(vec, eps):
    return F.normalize(vec, dim=0, eps=eps)


class SpectralNorm:
    """The forward pre-hook: ``module.<name> = <name>_orig / sigma``.

    ``sigma`` is ``u . (W v)`` where ``W`` is the weight as a matrix with axis ``dim`` as rows
    and ``u``, ``v`` are the singular-vector buffers.
    """

    _version = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        self.name, self.dim = name, dim
        if not n_power_iterations > 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations, self.eps = n_power_iterations, eps

    def reshape_weight_to_matrix(self, weight):
        """``weight`` as a matrix: axis ``dim`` becomes the rows, the others are flattened."""
        rows = weight.movedim(self.dim, 0) if self.dim != 0 else weight
        return rows.reshape(rows.shape[0], -1)

    def _refine(self, mat, u, v) -> None:
        """Power iteration on the buffers ``u`` and ``v`` (in place, outside autograd)."""
        with _state.grad_disabled():
            for _ in range(self.n_power_iterations):
                v.copy_(_unit(_ops.mv(mat.t(), u), self.eps))
                u.copy_(_unit(_ops.mv(mat, v), self.eps))

    def compute_weight(self, module, do_power_iteration: bool):
        """The normalised weight; with ``do_power_iteration`` the buffers are refined first."""
        original = getattr(module, f"{self.name}_orig")
        u, v = getattr(module, f"{self.name}_u"), getattr(module, f"{self.name}_v")
        mat = self.reshape_weight_to_matrix(original)
        if do_power_iteration:
            self._refine(mat, u, v)
            # copies, so that the next in-place refinement can't invalidate this graph
            u, v = u.clone(), v.clone()
        sigma = _ops.dot(u, _ops.mv(mat, v))
        return original / sigma

    def remove(self, module) -> None:
        """Replace the buffers and ``<name>_orig`` by a plain parameter with the current value."""
        with _state.grad_disabled():
            final = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(final.detach()))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name: str, n_power_iterations: int, dim: int, eps: float) -> "SpectralNorm":
        """Install the hook on ``module.<name>`` with random unit starting vectors."""
        if _hook_key(module, name) is not None:
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        hook = SpectralNorm(name, n_power_iterations, dim, eps)
        param = module._parameters[name]
        if param is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if is_lazy(param):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized parameters. Make sure to "
                             "run the dummy forward before applying spectral normalization")
        with _state.grad_disabled():
            rows, cols = hook.reshape_weight_to_matrix(param).shape
            start_u = _unit(param.new_empty(rows).normal_(0, 1), hook.eps)
            start_v = _unit(param.new_empty(cols).normal_(0, 1), hook.eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", param)
        # a plain attribute until the first forward computes the normalised weight
        setattr(module, name, param.detach())
        module.register_buffer(name + "_u", start_u)
        module.register_buffer(name + "_v", start_v)
        module.register_forward_pre_hook(hook)
        saving = module.register_state_dict_post_hook(SpectralNormStateDictHook(hook))
        loading = module._register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(hook))
        hook._state_handles = (saving, loading)
        return hook


class SpectralNormLoadStateDictPreHook:
    """Checks state dicts written without the version record.

    Those with the current keys load as they are; those of the first layout (the normalised
    ``<name>`` saved, no ``<name>_v``) are refused with NotImplementedError, since rebuilding
    ``<name>_v`` needs a pseudo-inverse; incomplete ones report their missing keys.
    """

    def __init__(self, fn) -> None:
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs) -> None:
        name = self.fn.name
        version = local_metadata.get("spectral_norm", {}).get(f"{name}.version")
        if version is not None and version >= 1:
            return
        base = prefix + name
        current_layout = base not in state_dict and all(base + s in state_dict for s in ("_orig", "_u", "_v"))
        if version is None and current_layout:
            return
        absent = [base + s for s in ("_orig", "", "_u") if base + s not in state_dict]
        if absent:
            if strict:
                missing_keys.extend(absent)
            return
        raise NotImplementedError(
            f"{base}: this spectral_norm state dict predates the hook's version 1 (it has no "
            f"{name}_v); rebuilding {name}_v needs a pseudo-inverse, which ember does not have")


class SpectralNormStateDictHook:
    """Writes ``metadata['spectral_norm'][<name>.version]`` when the state dict is made."""

    def __init__(self, fn) -> None:
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata) -> None:
        versions = local_metadata.setdefault("spectral_norm", {})
        key = f"{self.fn.name}.version"
        if key in versions:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        versions[key] = self.fn._version


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim=None):
    """Normalise ``module.<name>`` by its spectral norm before each forward; ``dim`` (the axis
    taken as the rows) defaults to 1 for transposed convolutions and 0 otherwise."""
    rows_axis = (1 if isinstance(module, _TRANSPOSED) else 0) if dim is None else dim
    SpectralNorm.apply(module, name, n_power_iterations, rows_axis, eps)
    return module


def remove_spectral_norm(module, name: str = "weight"):
    """Undo :func:`spectral_norm`: ``<name>`` becomes a plain parameter holding the current
    ``<name>_orig / sigma``."""
    key = _hook_key(module, name)
    if key is None:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    hook = module._forward_pre_hooks.pop(key)
    hook.remove(module)
    for handle in hook._state_handles:
        handle.remove()
    return module
