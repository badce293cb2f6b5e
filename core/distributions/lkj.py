"""LKJCholesky: the Cholesky factor L of a correlation matrix L L^T with density proportional to
det(L L^T)^(concentration - 1), drawn by the onion method (row k of L is (sqrt(y) u, sqrt(1 - y))
with y ~ Beta(k/2, concentration + (dim - 1 - k)/2) and u uniform on the sphere of R^k)."""
from __future__ import annotations

import math

from .. import ops as _ops
from .._tensor import Size
from ..autograd import no_grad
from . import _sampling
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """Cholesky factors of ``dim`` x ``dim`` correlation matrices (LKJ distribution)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        super().__init__(self.concentration.size(), Size((dim, dim)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(LKJCholesky, batch_shape, _instance, ("concentration",), keep=("dim",))

    def _row_shapes(self):
        """The beta parameters of rows 1..dim-1: (k/2, concentration + (dim - 1 - k)/2)."""
        k = _ops.arange(1, self.dim, dtype=self.concentration.dtype, device=self.concentration.device)
        b = self.concentration.unsqueeze(-1) + (self.dim - 1 - k) / 2
        return k / 2, b

    def sample(self, sample_shape=Size()):
        with no_grad():
            shape = self._extended_shape(sample_shape)
            a, b = self._row_shapes()
            rows = tuple(shape[:-2]) + (self.dim - 1,)
            y = _sampling.beta_draw(a.expand(rows), b.expand(rows))
            u = _ops.randn(shape, dtype=self.concentration.dtype, device=self.concentration.device).tril(-1)
            u = u / u.pow(2).sum(-1, keepdim=True).sqrt().clamp(min=1e-30)
            top = _ops.zeros_like(y[..., :1])
            w = u * _ops.cat([top, y], -1).sqrt().unsqueeze(-1)
            diag = _ops.cat([_ops.ones_like(top), (1 - y).clamp(min=0).sqrt()], -1)
            return w + _ops.diag_embed(diag)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag = _ops.diagonal(value, 0, -2, -1)[..., 1:]
        a, b = self._row_shapes()
        exponent = 2 * b - 2  # = dim - k + 2 concentration - 3 for row k
        norm = (-a * math.log(math.pi) - _ops.lgamma(b) + _ops.lgamma(a + b)).sum(-1)
        return (exponent * diag.log()).sum(-1) + norm
