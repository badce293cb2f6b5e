"""Location-scale and simple continuous families with closed-form everything: Normal, Laplace,
Cauchy, Uniform, Exponential, GeneralizedPareto."""
from __future__ import annotations

import math
from numbers import Number

from .. import _dtype as _D
from .. import ops as _ops
from .._tensor import Size
from ..autograd import no_grad
from . import constraints
from .distribution import Distribution, ExponentialFamily
from .utils import broadcast_all

__all__ = ["Cauchy", "Exponential", "GeneralizedPareto", "Laplace", "Normal", "Uniform"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _uniform_open(shape, like):
    """Uniform draws in (0, 1): the [0, 1) draws with 0 moved to the smallest normal number."""
    u = _ops.rand(shape, dtype=like.dtype, device=like.device)
    return u.clamp(min=_D.finfo(like.dtype).tiny)


class _LocScale(Distribution):
    """Shared parts of the families given by ``loc`` and ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        shape = Size() if isinstance(loc, Number) and isinstance(scale, Number) else self.loc.size()
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(type(self), batch_shape, _instance, ("loc", "scale"))

    @property
    def mode(self):
        return self.loc

    def _z(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (value - self.loc) / self.scale


class Normal(_LocScale, ExponentialFamily):
    """N(loc, scale^2)."""

    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale.pow(2)

    def sample(self, sample_shape=Size()):
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        eps = _ops.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        z = self._z(value)
        return -0.5 * z * z - self.scale.log() - _HALF_LOG_2PI

    def cdf(self, value):
        return 0.5 * (1 + _ops.erf(self._z(value) * (1 / math.sqrt(2))))

    def icdf(self, value):
        return self.loc + self.scale * _ops.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + _HALF_LOG_2PI + self.scale.log()

    @property
    def _natural_params(self):
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()


class Laplace(_LocScale):
    """Laplace(loc, scale): density exp(-|x - loc| / scale) / (2 scale)."""

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = _D.finfo(self.loc.dtype).eps
        u = _ops.rand(shape, dtype=self.loc.dtype, device=self.loc.device) * (2 - eps) + (eps - 1)  # (-1, 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value):
        return -self._z(value).abs() - (2 * self.scale).log()

    def cdf(self, value):
        z = self._z(value)
        return 0.5 - 0.5 * z.sign() * (-z.abs()).expm1()

    def icdf(self, value):
        d = value - 0.5
        return self.loc - self.scale * d.sign() * (-2 * d.abs()).log1p()

    def entropy(self):
        return 1 + (2 * self.scale).log()


class Cauchy(_LocScale):
    """Cauchy(loc, scale): density 1 / (pi scale (1 + ((x - loc) / scale)^2))."""

    @property
    def mean(self):
        return _ops.full(self._extended_shape(), math.nan, dtype=self.loc.dtype, device=self.loc.device)

    @property
    def variance(self):
        return _ops.full(self._extended_shape(), math.inf, dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape=Size()):
        u = _uniform_open(self._extended_shape(sample_shape), self.loc)
        return self.loc + self.scale * (math.pi * (u - 0.5)).tan()

    def log_prob(self, value):
        z = self._z(value)
        return -math.log(math.pi) - self.scale.log() - (z * z).log1p()

    def cdf(self, value):
        return self._z(value).atan() / math.pi + 0.5

    def icdf(self, value):
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class Uniform(Distribution):
    """Uniform on the half-open interval [low, high)."""

    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        shape = Size() if isinstance(low, Number) and isinstance(high, Number) else self.low.size()
        super().__init__(shape, validate_args=validate_args)

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Uniform, batch_shape, _instance, ("low", "high"))

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return _ops.full_like(self.high, math.nan)

    @property
    def stddev(self):
        return (self.high - self.low) / math.sqrt(12)

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=Size()):
        u = _ops.rand(self._extended_shape(sample_shape), dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        inside = (self.low <= value) & (self.high > value)
        return inside.to(self.low.dtype).log() - (self.high - self.low).log()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return (self.high - self.low).log()


class Exponential(ExponentialFamily):
    """Exponential(rate): density rate exp(-rate x) on x >= 0."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        shape = Size() if isinstance(rate, Number) else self.rate.size()
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Exponential, batch_shape, _instance, ("rate",))

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return _ops.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=Size()):
        u = _ops.rand(self._extended_shape(sample_shape), dtype=self.rate.dtype, device=self.rate.device)
        return -(-u).log1p() / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value):
        return -(-value).log1p() / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -(-x).log()


class GeneralizedPareto(Distribution):
    """The generalised Pareto distribution: survival (1 + concentration z)^(-1/concentration),
    z = (x - loc) / scale (exp(-z) at concentration 0); bounded above when concentration < 0."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(GeneralizedPareto, batch_shape, _instance, ("loc", "scale", "concentration"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        xi = self.concentration
        upper = _ops.where(xi < 0, self.loc - self.scale / xi.clamp(max=-1e-38),
                           _ops.full_like(self.loc, math.inf))
        return constraints.interval(self.loc, upper)

    def _z(self, x):
        return (x - self.loc) / self.scale

    def _zero(self):
        return self.concentration == 0

    def _safe_xi(self):
        return _ops.where(self._zero(), 1.0, self.concentration)

    def log_survival_function(self, value):
        """log P(X > value)."""
        z = self._z(value)
        xi = self._safe_xi()
        return _ops.where(self._zero(), -z, -(xi * z).log1p() / xi)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        xi = self._safe_xi()
        lp = _ops.where(self._zero(), -z, -(1 + 1 / xi) * (xi * z).log1p())
        return lp - self.scale.log()

    def log_cdf(self, value):
        """log P(X <= value)."""
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value):
        return -(self.log_survival_function(value).expm1())

    def icdf(self, value):
        xi = self._safe_xi()
        tail = (-value).log1p()  # log(1 - p)
        z = _ops.where(self._zero(), -tail, (-xi * tail).expm1() / xi)
        return self.loc + self.scale * z

    def rsample(self, sample_shape=Size()):
        u = _ops.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    @property
    def mean(self):
        xi = self.concentration
        return _ops.where(xi < 1, self.loc + self.scale / (1 - xi), math.nan)  # NaN where infinite, as PyTorch

    @property
    def variance(self):
        xi = self.concentration
        v = self.scale.pow(2) / ((1 - xi).pow(2) * (1 - 2 * xi))
        return _ops.where(xi < 0.5, v, math.nan)

    @property
    def mode(self):
        return self.loc

    def entropy(self):
        return self.scale.log() + self.concentration + 1
