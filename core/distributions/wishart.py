"""The Wishart distribution over positive-definite matrices, drawn by Bartlett's decomposition
(X = L A A^T L^T, A lower triangular with chi draws on the diagonal and normal draws below);
reparameterised through the chi-squared (gamma) draws."""
from __future__ import annotations

import math
import warnings
from numbers import Number

from .. import linalg as _linalg
from .. import ops as _ops
from .._tensor import Size
from . import constraints
from .distribution import ExponentialFamily
from .gamma_family import Chi2
from .multivariate import _precision_to_tril
from .utils import lazy_property

__all__ = ["Wishart"]


def _mvlgamma(a, p: int):
    """log of the multivariate gamma function Gamma_p(a)."""
    j = _ops.arange(p, dtype=a.dtype, device=a.device)
    return p * (p - 1) / 4 * math.log(math.pi) + _ops.lgamma(a.unsqueeze(-1) - j / 2).sum(-1)


def _mvdigamma(a, p: int):
    j = _ops.arange(p, dtype=a.dtype, device=a.device)
    return _ops.digamma(a.unsqueeze(-1) - j / 2).sum(-1)


class Wishart(ExponentialFamily):
    """Wishart(df, Sigma) over p x p matrices, Sigma given by exactly one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        given = {"scale_tril": scale_tril, "covariance_matrix": covariance_matrix,
                 "precision_matrix": precision_matrix}
        name, mat = next((k, v) for k, v in given.items() if v is not None)
        if mat.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        p = mat.shape[-1]
        if isinstance(df, Number):
            batch = tuple(mat.shape[:-2])
            self.df = _ops.full(batch, float(df), dtype=mat.dtype, device=mat.device)
        else:
            batch = tuple(_ops.broadcast_shapes(mat.shape[:-2], df.shape))
            self.df = df.expand(batch)
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, mat.expand(batch + (p, p)))
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = _linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_tril(precision_matrix)
        super().__init__(Size(batch), Size((p, p)), validate_args=validate_args)
        if bool((self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < "
                          "ndim.", stacklevel=2)
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) - _ops.arange(p, dtype=self.df.dtype, device=self.df.device))

    @property
    def arg_constraints(self):
        p = self._event_shape[-1] if hasattr(self, "_event_shape") else 1
        return {"covariance_matrix": constraints.positive_definite, "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky, "df": constraints.greater_than(p - 1)}

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(Wishart, batch_shape, _instance,
                                  ("df", "covariance_matrix", "precision_matrix", "scale_tril"),
                                  keep=("_unbroadcasted_scale_tril",))
        p = self._event_shape[-1]
        new._dist_chi2 = Chi2(new.df.unsqueeze(-1) - _ops.arange(p, dtype=new.df.dtype, device=new.df.device))
        return new

    def _full(self, m):
        return m.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        tril = self._unbroadcasted_scale_tril
        return self._full(tril @ tril.mT)

    @lazy_property
    def precision_matrix(self):
        return self._full(_ops.cholesky_inverse(self._unbroadcasted_scale_tril))

    @property
    def mean(self):
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def mode(self):
        p = self._event_shape[-1]
        factor = (self.df - p - 1).view(tuple(self._batch_shape) + (1, 1))
        return _ops.where(factor > 0, factor * self.covariance_matrix, math.nan)

    @property
    def variance(self):
        v = self.covariance_matrix
        diag = _ops.diagonal(v, 0, -2, -1)
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * (v.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def rsample(self, sample_shape=Size(), max_try_correction=None):
        """Bartlett's decomposition; ``max_try_correction`` is accepted for PyTorch's signature
        (draws are not retried)."""
        shape = Size(sample_shape)
        p = self._event_shape[-1]
        chi = self._dist_chi2.rsample(shape).sqrt()  # sample + batch + (p,)
        full = tuple(shape) + tuple(self._batch_shape) + (p, p)
        noise = _ops.randn(full, dtype=chi.dtype, device=chi.device).tril(-1)
        a = noise + _ops.diag_embed(chi)
        la = self._unbroadcasted_scale_tril @ a
        return la @ la.mT

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        p = self._event_shape[-1]
        nu = self.df
        tril = self._unbroadcasted_scale_tril
        half_logdet_sigma = _ops.diagonal(tril, 0, -2, -1).log().sum(-1)
        logdet_x = _linalg.slogdet(value).logabsdet
        n = tril.shape[-1]
        batch = _ops.broadcast_shapes(tril.shape[:-2], value.shape[:-2])
        solved = _linalg.solve_triangular(tril.expand(tuple(batch) + (n, n)), value.expand(tuple(batch) + (n, n)),
                                          upper=False)
        trace = _ops.diagonal(_linalg.solve_triangular(tril.expand(tuple(batch) + (n, n)), solved.mT, upper=False),
                              0, -2, -1).sum(-1)
        return (0.5 * (nu - p - 1) * logdet_x - 0.5 * trace - 0.5 * nu * p * math.log(2)
                - nu * half_logdet_sigma - _mvlgamma(nu / 2, p))

    def entropy(self):
        p = self._event_shape[-1]
        nu = self.df
        half_logdet_sigma = _ops.diagonal(self._unbroadcasted_scale_tril, 0, -2, -1).log().sum(-1)
        return ((p + 1) * half_logdet_sigma + 0.5 * p * (p + 1) * math.log(2) + _mvlgamma(nu / 2, p)
                - 0.5 * (nu - p - 1) * _mvdigamma(nu / 2, p) + 0.5 * nu * p)

    @property
    def _natural_params(self):
        return (-0.5 * self.precision_matrix, 0.5 * (self.df - self._event_shape[-1] - 1))

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        nu = 2 * y + p + 1
        return -nu * 0.5 * _linalg.slogdet(-2 * x).logabsdet + nu * p * 0.5 * math.log(2) + _mvlgamma(nu / 2, p)
