"""``nn.utils.parametrizations``: ``weight_norm``, ``spectral_norm`` and ``orthogonal``-free basics,
built on :mod:`parametrize` with PyTorch's state-dict keys
(``parametrizations.weight.original0`` / ``original1`` for weight norm, ``original`` and
``0._u`` / ``0._v`` for spectral norm)."""
from __future__ import annotations

from ...ops import creation as _factory
from ... import ops as _ops
from ... import _state
from ..._tensor import Tensor
from .. import functional as F
from ..modules.module import Module
from . import parametrize
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

__all__ = ["weight_norm", "spectral_norm"]


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    if dim == -1 or dim is None:
        return _ops.norm(v)
    dims = tuple(d for d in range(v.dim()) if d != dim)
    return _ops.norm(v, 2, dims, keepdim=True) if dims else v.abs()


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (norm over every dim but ``dim``);
    ``g`` is ``parametrizations.<name>.original0`` and ``v`` is ``original1``."""
    wn = _WeightNorm(dim)
    if dim is not None and dim < -1:
        wn.dim = dim + getattr(module, name).dim()
    parametrize.register_parametrization(module, name, wn, unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got n_power_iterations="
                             f"{n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            wm = self._reshape_weight_to_matrix(weight)
            h, w = wm.shape
            u = F.normalize(_factory.empty(h, dtype=weight.dtype, device=weight.device).normal_(0, 1), dim=0, eps=eps)
            v = F.normalize(_factory.empty(w, dtype=weight.dtype, device=weight.device).normal_(0, 1), dim=0, eps=eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(wm, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute((self.dim,) + tuple(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n: int) -> None:
        with _state.grad_disabled():
            for _ in range(n):
                self._u.copy_(F.normalize(weight_mat.matmul(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(weight_mat.t().matmul(self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        wm = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(wm.detach(), self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = (u * wm.matmul(v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Reparametrize ``module.<name>`` divided by its largest singular value (estimated by power
    iteration, updated in training mode)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
