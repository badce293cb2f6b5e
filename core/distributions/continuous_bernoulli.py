"""The continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham, 2019):
density C(p) p^x (1 - p)^(1 - x). Near p = 1/2 the closed forms divide 0 by 0, so inside
``lims`` each quantity uses its Taylor expansion in t = p - 1/2 instead."""
from __future__ import annotations

import math
from numbers import Number

from .. import ops as _ops
from .._tensor import Size
from ..autograd import no_grad
from ..nn import functional as _F
from . import constraints
from .distribution import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """ContinuousBernoulli(probs or logits), with ``lims`` the interval around 1/2 where the
    Taylor forms are used."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            self.probs = clamp_probs(self.probs)
            self._param = self.probs
        else:
            scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        self._lims = lims
        super().__init__(Size() if scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(ContinuousBernoulli, batch_shape, _instance, ("probs", "logits"), keep=("_lims",))
        new._param = new.__dict__["probs" if "probs" in self.__dict__ else "logits"]
        return new

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def _stable(self):
        """Where the closed forms are usable (outside ``lims``)."""
        return (self.probs <= self._lims[0]) | (self.probs >= self._lims[1])

    def _safe_probs(self):
        """The probabilities, moved out of ``lims`` where they fall inside (those entries are
        then replaced by the Taylor forms)."""
        return _ops.where(self._stable(), self.probs, self._lims[0] * _ops.ones_like(self.probs))

    def _log_norm(self):
        p = self._safe_probs()
        # C(p) = 2 atanh(1 - 2p) / (1 - 2p) = log((1 - p) / p) / (1 - 2p)
        exact = ((-p).log1p() - p.log()).abs().log() - (1 - 2 * p).abs().log()
        t = self.probs - 0.5
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * t * t) * t * t
        return _ops.where(self._stable(), exact, taylor)

    @property
    def mean(self):
        p = self._safe_probs()
        exact = p / (2 * p - 1) + 1 / ((1 - p).log() - p.log())  # 2 atanh(1 - 2p) = log((1 - p) / p)
        t = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * t * t) * t
        return _ops.where(self._stable(), exact, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        p = self._safe_probs()
        exact = p * (p - 1) / (1 - 2 * p).pow(2) + 1 / ((1 - p).log() - p.log()).pow(2)
        t2 = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 + 128.0 / 945.0 * t2) * t2
        return _ops.where(self._stable(), exact, taylor)

    def sample(self, sample_shape=Size()):
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = _ops.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_F.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        p = self._safe_probs()
        exact = (p.pow(value) * (1 - p).pow(1 - value) + p - 1) / (2 * p - 1)
        c = _ops.where(self._stable(), exact, value)
        return _ops.where(value <= 0, 0.0, _ops.where(value >= 1, 1.0, c))

    def icdf(self, value):
        p = self._safe_probs()
        exact = ((-p + value * (2 * p - 1)).log1p() - (-p).log1p()) / (p.log() - (-p).log1p())
        return _ops.where(self._stable(), exact, value)

    def entropy(self):
        log_p0 = (-self.probs).log1p()
        log_p1 = self.probs.log()
        return self.mean * (log_p0 - log_p1) - self._log_norm() - log_p0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """log of the integral of exp(x t) over [0, 1]: log((e^x - 1) / x), 0-safe."""
        small = x.abs() < 1e-4
        safe = _ops.where(small, _ops.ones_like(x), x)
        exact = (safe.expm1().abs()).log() - safe.abs().log()
        return _ops.where(small, x / 2 + x * x / 24, exact)
