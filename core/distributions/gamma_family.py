"""Families built on gamma variables: Gamma, Chi2, Beta, Dirichlet, StudentT, FisherSnedecor,
InverseGamma.
Their draws are reparameterised through the implicit gamma gradient (see ``_sampling``)."""
from __future__ import annotations

import math
from numbers import Number

from .. import _dtype as _D
from .. import ops as _ops
from .._tensor import Size
from . import _sampling
from . import constraints
from ._transform_base import PowerTransform
from .distribution import Distribution, ExponentialFamily
from .utils import broadcast_all
from .wrappers import TransformedDistribution

__all__ = ["Beta", "Chi2", "Dirichlet", "FisherSnedecor", "Gamma", "InverseGamma", "StudentT"]


def _lgamma(t):
    return _ops.lgamma(t)


def _digamma(t):
    return _ops.digamma(t)


def _check(d, value):
    if d._validate_args:
        d._validate_sample(value)


def _tiny(t):
    return _D.finfo(t.dtype).tiny


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate): density rate^a x^(a-1) exp(-rate x) / Gamma(a)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        scalar = isinstance(concentration, Number) and isinstance(rate, Number)
        super().__init__(Size() if scalar else self.concentration.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(type(self), batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        x = _sampling.standard_gamma_rsample(self.concentration.expand(shape)) / self.rate.expand(shape)
        return x.clamp(min=_tiny(x))

    def log_prob(self, value):
        _check(self, value)
        value = _ops.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        a, b = self.concentration, self.rate
        return _ops.xlogy(a, b) + _ops.xlogy(a - 1, value) - b * value - _lgamma(a)

    def entropy(self):
        a = self.concentration
        return a - self.rate.log() + _lgamma(a) + (1.0 - a) * _digamma(a)

    def cdf(self, value):
        _check(self, value)
        value = _ops.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        return _ops.igamma(self.concentration, self.rate * value)

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return _lgamma(x + 1) + (x + 1) * (-y.reciprocal()).log()


class Chi2(Gamma):
    """Chi-squared with ``df`` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * broadcast_all(df)[0] if not isinstance(df, Number) else 0.5 * df, 0.5,
                         validate_args=validate_args)

    @property
    def df(self):
        return self.concentration * 2


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration) on the simplex of the last dim."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Dirichlet, batch_shape, _instance, ("concentration",))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        g = _sampling.standard_gamma_rsample(self.concentration.expand(shape))
        x = g / g.sum(-1, keepdim=True)
        return x.clamp(min=_tiny(x), max=1 - _D.finfo(x.dtype).eps)

    def log_prob(self, value):
        _check(self, value)
        a = self.concentration
        return _ops.xlogy(a - 1.0, value).sum(-1) + _lgamma(a.sum(-1)) - _lgamma(a).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        lifted = (self.concentration - 1).clamp(min=0.0)
        m = lifted / lifted.sum(-1, keepdim=True)
        corner = (self.concentration < 1).all(-1)
        hot = (_ops.arange(lifted.shape[-1], device=m.device) == lifted.argmax(-1, keepdim=True)).to(m.dtype)
        return _ops.where(corner.unsqueeze(-1), hot, m)

    @property
    def variance(self):
        a0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (a0 - self.concentration) / (a0.pow(2) * (a0 + 1))

    def entropy(self):
        a = self.concentration
        k = a.size(-1)
        a0 = a.sum(-1)
        return _lgamma(a).sum(-1) - _lgamma(a0) - (k - a0) * _digamma(a0) - ((a - 1.0) * _digamma(a)).sum(-1)

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return _lgamma(x).sum(-1) - _lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """Beta(concentration1, concentration0) on [0, 1]: the first coordinate of a Dirichlet."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, Number) and isinstance(concentration0, Number):
            pair = _ops.tensor([float(concentration1), float(concentration0)], dtype=_D.get_default_dtype())
        else:
            c1, c0 = broadcast_all(concentration1, concentration0)
            pair = _ops.stack([c1, c0], -1)
        self._dirichlet = Dirichlet(pair, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, Size(batch_shape), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        _check(self, value)
        pair = _ops.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(pair)

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return _lgamma(x) + _lgamma(y) - _lgamma(x + y)

    def __repr__(self):
        c = self._dirichlet.concentration
        c1, c0 = c[..., 0], c[..., 1]
        if c1.numel() == 1:
            return f"Beta(concentration1: {c1.item()}, concentration0: {c0.item()})"
        return f"Beta(concentration1: {c1.size()}, concentration0: {c0.size()})"


class StudentT(Distribution):
    """Student's t with ``df`` degrees of freedom, location ``loc`` and scale ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(StudentT, batch_shape, _instance, ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self):
        return _ops.where(self.df > 1, self.loc, math.nan).expand(self._batch_shape).clone()

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        v = self.scale.pow(2) * self.df / (self.df - 2)
        v = _ops.where(self.df <= 2, math.inf, v)
        return _ops.where(self.df <= 1, math.nan, v)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        z = _ops.randn(shape, dtype=self.df.dtype, device=self.df.device)
        chi = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * z * (self.df / chi).sqrt()

    def log_prob(self, value):
        _check(self, value)
        y = (value - self.loc) / self.scale
        norm = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + _lgamma(0.5 * self.df)
                - _lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - norm

    def entropy(self):
        half = 0.5 * self.df
        log_beta = _lgamma(half) + math.lgamma(0.5) - _lgamma(half + 0.5)
        return (self.scale.log() + (half + 0.5) * (_digamma(half + 0.5) - _digamma(half))
                + 0.5 * self.df.log() + log_beta)


class FisherSnedecor(Distribution):
    """The F distribution: the ratio of two chi-squared draws, each over its degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1 * 0.5)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2 * 0.5)
        scalar = isinstance(df1, Number) and isinstance(df2, Number)
        super().__init__(Size() if scalar else self.df1.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(FisherSnedecor, batch_shape, _instance, ("df1", "df2"))
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self):
        return _ops.where(self.df2 > 2, self.df2 / (self.df2 - 2), math.nan)

    @property
    def mode(self):
        m = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return _ops.where(self.df1 > 2, m, math.nan)

    @property
    def variance(self):
        d1, d2 = self.df1, self.df2
        v = 2 * d2.pow(2) * (d1 + d2 - 2) / (d1 * (d2 - 2).pow(2) * (d2 - 4))
        return _ops.where(d2 > 4, v, math.nan)

    def rsample(self, sample_shape=Size()):
        x1 = self._gamma1.rsample(sample_shape)  # chi2(df1) / df1
        x2 = self._gamma2.rsample(sample_shape)
        ratio = x1 / x2
        return ratio.clamp(min=_tiny(ratio))

    def log_prob(self, value):
        _check(self, value)
        h1, h2 = self.df1 * 0.5, self.df2 * 0.5
        r = self.df1 / self.df2
        norm = _lgamma(h1 + h2) - _lgamma(h1) - _lgamma(h2)
        return norm + h1 * r.log() + (h1 - 1) * value.log() - (h1 + h2) * (r * value).log1p()


class InverseGamma(TransformedDistribution):
    """1 / X for X ~ Gamma(concentration, rate)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -_ops.ones_like(base.rate)
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return TransformedDistribution.expand(self, batch_shape, _instance=new)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        a = self.concentration
        return _ops.where(a > 1, self.rate / (a - 1), math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        a = self.concentration
        return _ops.where(a > 2, self.rate.pow(2) / ((a - 1).pow(2) * (a - 2)), math.inf)

    def entropy(self):
        a = self.concentration
        return a + self.rate.log() + _lgamma(a) - (1 + a) * _digamma(a)
