"""Gaussian vectors: MultivariateNormal (by covariance, precision or Cholesky factor) and
LowRankMultivariateNormal (covariance W W^T + diag(D), worked through the m x m capacitance
matrix I + W^T D^-1 W)."""
from __future__ import annotations

import math

from .. import linalg as _linalg
from .. import ops as _ops
from .._tensor import Size
from . import constraints
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["LowRankMultivariateNormal", "MultivariateNormal"]

_LOG_2PI = math.log(2 * math.pi)


def _lower_solve(tril, rhs):
    """tril^-1 rhs for a batch of vectors ``rhs`` (broadcast against the factor's batch)."""
    batch = _ops.broadcast_shapes(tril.shape[:-2], rhs.shape[:-1])
    n = tril.shape[-1]
    a = tril.expand(tuple(batch) + (n, n))
    b = rhs.expand(tuple(batch) + (n,)).unsqueeze(-1)
    return _linalg.solve_triangular(a, b, upper=False).squeeze(-1)


def _half_log_det(tril):
    return _ops.diagonal(tril, 0, -2, -1).log().sum(-1)


def _precision_to_tril(p):
    """A lower Cholesky factor of P^-1: with J the reversal, chol(J P J) = K gives
    P^-1 = (J K^-T J)(J K^-T J)^T, and J K^-T J is lower triangular."""
    k = _linalg.cholesky(_ops.flip(p, (-2, -1)))
    eye = _ops.eye(p.shape[-1], dtype=p.dtype, device=p.device).expand(p.shape)
    k_inv = _linalg.solve_triangular(k, eye, upper=False)
    return _ops.flip(k_inv.mT, (-2, -1))


class MultivariateNormal(Distribution):
    """N(loc, Sigma) over vectors, Sigma given by exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril``."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        given = {"scale_tril": scale_tril, "covariance_matrix": covariance_matrix,
                 "precision_matrix": precision_matrix}
        name, mat = next((k, v) for k, v in given.items() if v is not None)
        if mat.dim() < 2:
            raise ValueError(f"{name} must be at least two-dimensional, with optional leading batch dimensions")
        batch = _ops.broadcast_shapes(mat.shape[:-2], loc.shape[:-1])
        n = loc.shape[-1]
        setattr(self, name, mat.expand(tuple(batch) + (n, n)))
        self.loc = loc.expand(tuple(batch) + (n,))
        super().__init__(batch, self.loc.shape[-1:], validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = _linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(MultivariateNormal, batch_shape, _instance,
                                  ("loc", "covariance_matrix", "precision_matrix", "scale_tril"),
                                  keep=("_unbroadcasted_scale_tril",))
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def covariance_matrix(self):
        tril = self._unbroadcasted_scale_tril
        return (tril @ tril.mT).expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def precision_matrix(self):
        return _ops.cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = _ops.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _lower_solve(self._unbroadcasted_scale_tril, diff).pow(2).sum(-1)
        n = self._event_shape[0]
        return -0.5 * (n * _LOG_2PI + m) - _half_log_det(self._unbroadcasted_scale_tril)

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + _LOG_2PI) + _half_log_det(self._unbroadcasted_scale_tril)
        return h.expand(self._batch_shape) if len(self._batch_shape) else h


class LowRankMultivariateNormal(Distribution):
    """N(loc, W W^T + diag(D)) with ``cov_factor`` W (n x m) and ``cov_diag`` D."""

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        n = loc.shape[-1]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if cov_factor.shape[-2:-1] != (n,):
            raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m")
        if cov_diag.shape[-1:] != (n,):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {loc.shape[-1:]}")
        batch = _ops.broadcast_shapes(loc.shape[:-1], cov_factor.shape[:-2], cov_diag.shape[:-1])
        m = cov_factor.shape[-1]
        self.loc = loc.expand(tuple(batch) + (n,))
        self.cov_factor = cov_factor.expand(tuple(batch) + (n, m))
        self.cov_diag = cov_diag.expand(tuple(batch) + (n,))
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = self._capacitance(cov_factor, cov_diag)
        super().__init__(batch, (n,), validate_args=validate_args)

    @staticmethod
    def _capacitance(w, d):
        wd = w / d.unsqueeze(-1)
        cap = wd.mT @ w
        cap = cap + _ops.eye(w.shape[-1], dtype=w.dtype, device=w.device)
        return _linalg.cholesky(cap)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(LowRankMultivariateNormal, batch_shape, _instance, ("loc", "cov_factor", "cov_diag"),
                                   keep=("_unbroadcasted_cov_factor", "_unbroadcasted_cov_diag",
                                         "_capacitance_tril"))

    def _full(self, t, event_dims):
        return t.expand(tuple(self._batch_shape) + tuple(t.shape[-event_dims:]))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return self._full(w.pow(2).sum(-1) + d, 1)

    @lazy_property
    def covariance_matrix(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return self._full(w @ w.mT + _ops.diag_embed(d), 2)

    @lazy_property
    def scale_tril(self):
        return _linalg.cholesky(self.covariance_matrix)

    @lazy_property
    def precision_matrix(self):
        # Woodbury: D^-1 - D^-1 W C^-1 W^T D^-1 with C = Lc Lc^T
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        wd = w / d.unsqueeze(-1)
        half = _linalg.solve_triangular(self._capacitance_tril, wd.mT, upper=False)
        return self._full(_ops.diag_embed(d.reciprocal()) - half.mT @ half, 2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        m = self._unbroadcasted_cov_factor.shape[-1]
        eps_w = _ops.randn(tuple(shape[:-1]) + (m,), dtype=self.loc.dtype, device=self.loc.device)
        eps_d = _ops.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        low = (self._unbroadcasted_cov_factor @ eps_w.unsqueeze(-1)).squeeze(-1)
        return self.loc + low + self._unbroadcasted_cov_diag.sqrt() * eps_d

    def _log_det(self):
        return 2 * _half_log_det(self._capacitance_tril) + self._unbroadcasted_cov_diag.log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        plain = (diff.pow(2) / d).sum(-1)
        proj = ((w / d.unsqueeze(-1)).mT @ diff.unsqueeze(-1)).squeeze(-1)  # W^T D^-1 x
        corr = _lower_solve(self._capacitance_tril, proj).pow(2).sum(-1)
        n = self._event_shape[0]
        return -0.5 * (n * _LOG_2PI + plain - corr + self._log_det())

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * (n * (1.0 + _LOG_2PI) + self._log_det())
        return h.expand(self._batch_shape) if len(self._batch_shape) else h
