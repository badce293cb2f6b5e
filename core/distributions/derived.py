"""Families defined as a simpler distribution pushed through transforms: LogNormal, HalfNormal,
HalfCauchy, Gumbel, Weibull, Pareto, Kumaraswamy, LogisticNormal, and the relaxed (concrete)
Bernoulli and one-hot categorical with their logit-space bases."""
from __future__ import annotations

import math
from numbers import Number

from .. import _dtype as _D
from .. import ops as _ops
from .._tensor import Size
from ..nn import functional as _F
from . import constraints
from ._transform_base import AbsTransform, AffineTransform, ExpTransform, PowerTransform, SigmoidTransform
from ._transform_base import StickBreakingTransform
from .continuous import Cauchy, Exponential, Normal, Uniform
from .discrete import Categorical, _Binary
from .distribution import Distribution
from .utils import broadcast_all, clamp_probs, euler_constant
from .wrappers import Independent, TransformedDistribution

__all__ = ["ExpRelaxedCategorical", "Gumbel", "HalfCauchy", "HalfNormal", "Kumaraswamy", "LogNormal",
           "LogisticNormal", "LogitRelaxedBernoulli", "Pareto", "RelaxedBernoulli", "RelaxedOneHotCategorical",
           "Weibull"]

_EULER = euler_constant


def _lgamma(t):
    return _ops.lgamma(t)


def _digamma(t):
    return _ops.digamma(t)


def _expand_transformed(self, cls, batch_shape, _instance):
    new = self._get_checked_instance(cls, _instance)
    return TransformedDistribution.expand(self, batch_shape, _instance=new)


class LogNormal(TransformedDistribution):
    """exp of a Normal(loc, scale) draw."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_transformed(self, LogNormal, batch_shape, _instance)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.pow(2)).exp()

    @property
    def variance(self):
        s2 = self.scale.pow(2)
        return s2.expm1() * (2 * self.loc + s2).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class _Folded(TransformedDistribution):
    """|X| for X symmetric about 0 with scale ``scale`` (half-normal, half-Cauchy)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    @property
    def scale(self):
        return self.base_dist.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lp = self.base_dist.log_prob(value) + math.log(2)
        return _ops.where(value >= 0, lp, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)

    @property
    def mode(self):
        return _ops.zeros_like(self.scale)


class HalfNormal(_Folded):
    """|X| for X ~ Normal(0, scale)."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_transformed(self, HalfNormal, batch_shape, _instance)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Folded):
    """|X| for X ~ Cauchy(0, scale)."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_transformed(self, HalfCauchy, batch_shape, _instance)

    @property
    def mean(self):
        return _ops.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self):
        return _ops.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)


class Gumbel(TransformedDistribution):
    """Gumbel(loc, scale): loc - scale log(-log U), U uniform."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        fi = _D.finfo(self.loc.dtype)
        if isinstance(loc, Number) and isinstance(scale, Number):
            base = Uniform(fi.tiny, 1 - fi.eps, validate_args=validate_args)
        else:
            base = Uniform(_ops.full_like(self.loc, fi.tiny), _ops.full_like(self.loc, 1 - fi.eps),
                           validate_args=validate_args)
        chain = [ExpTransform().inv, AffineTransform(0, -_ops.ones_like(self.scale)), ExpTransform().inv,
                 AffineTransform(self.loc, -self.scale)]
        super().__init__(base, chain, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = _expand_transformed(self, Gumbel, batch_shape, _instance)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        return new

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (self.loc - value) / self.scale
        return (z - z.exp()) - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * _EULER

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + _EULER)


class Weibull(TransformedDistribution):
    """Weibull(scale, concentration): scale E^(1/concentration), E ~ Exponential(1)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(_ops.ones_like(self.scale), validate_args=validate_args)
        chain = [PowerTransform(exponent=self.concentration_reciprocal), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, chain, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        base = self.base_dist.expand(batch_shape)
        chain = [PowerTransform(exponent=new.concentration_reciprocal), AffineTransform(loc=0, scale=new.scale)]
        TransformedDistribution.__init__(new, base, chain, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.scale * _lgamma(1 + self.concentration_reciprocal).exp()

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k).pow(k.reciprocal()) * (k > 1).to(k.dtype)

    @property
    def variance(self):
        r = self.concentration_reciprocal
        return self.scale.pow(2) * (_lgamma(1 + 2 * r).exp() - _lgamma(1 + r).exp().pow(2))

    def entropy(self):
        return (_EULER * (1 - self.concentration_reciprocal) + (self.scale / self.concentration).log() + 1)


class Pareto(TransformedDistribution):
    """Pareto(scale, alpha): scale exp(E), E ~ Exponential(alpha); support [scale, inf)."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        super().__init__(base, [ExpTransform(), AffineTransform(loc=0, scale=self.scale)],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.alpha = self.alpha.expand(batch_shape)
        TransformedDistribution.__init__(new, Exponential(new.alpha, validate_args=False),
                                         [ExpTransform(), AffineTransform(loc=0, scale=new.scale)],
                                         validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        return (self.scale / self.alpha).log() + self.alpha.reciprocal() + 1


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy(a, b) on [0, 1]: (1 - U^(1/b))^(1/a), U uniform; density a b x^(a-1) (1-x^a)^(b-1)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(_ops.full_like(self.concentration0, 0), _ops.full_like(self.concentration0, 1),
                       validate_args=validate_args)
        chain = [PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
                 PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base, chain, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return _expand_transformed(self, Kumaraswamy, batch_shape, new)

    def _moment(self, n):
        a, b = self.concentration1, self.concentration0
        return (b.log() + _lgamma(1 + n / a) + _lgamma(b) - _lgamma(1 + b + n / a)).exp()

    @property
    def mean(self):
        return self._moment(1)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        m = ((a - 1) / (a * b - 1)).pow(a.reciprocal())
        return _ops.where((a >= 1) & (b >= 1) & ((a > 1) | (b > 1)), m, math.nan)

    @property
    def variance(self):
        return self._moment(2) - self._moment(1).pow(2)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic_b = _digamma(b + 1) + _EULER
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic_b - (a * b).log()


class LogisticNormal(TransformedDistribution):
    """The stick-breaking image of a Normal(loc, scale) vector: a distribution on the simplex
    with one more coordinate than ``loc``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(Independent(base, 1), StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_transformed(self, LogisticNormal, batch_shape, _instance)

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale


class LogitRelaxedBernoulli(_Binary, Distribution):
    """The logit of a relaxed Bernoulli draw at ``temperature``: (logits + logistic noise) / T."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            self._param = self.probs
        else:
            scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        super().__init__(Size() if scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(LogitRelaxedBernoulli, batch_shape, _instance, ("probs", "logits"),
                                  keep=("temperature",))
        new._param = new.__dict__["probs" if "probs" in self.__dict__ else "logits"]
        return new

    @property
    def param_shape(self):
        return self._param.size()

    has_rsample = True

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(_ops.rand(shape, dtype=probs.dtype, device=probs.device))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        t = self.temperature if not isinstance(self.temperature, Number) else _ops.tensor(float(self.temperature))
        return t.log() + diff - 2 * _F.softplus(diff)


class _RelaxedParams:
    """The relaxed families' parameters, read from their base (logit- or log-space) distribution."""

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


class RelaxedBernoulli(_RelaxedParams, TransformedDistribution):
    """The concrete (Gumbel-softmax) relaxation of a Bernoulli: sigmoid of a
    LogitRelaxedBernoulli draw; values in (0, 1), reparameterised."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_transformed(self, RelaxedBernoulli, batch_shape, _instance)


class ExpRelaxedCategorical(Distribution):
    """The log of a relaxed one-hot categorical draw: log-softmax((logits + Gumbel noise) / T)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        from_cat = Categorical(probs, logits)
        self._categorical = from_cat
        self.temperature = temperature
        super().__init__(from_cat.batch_shape, from_cat.param_shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, Size(batch_shape), self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        logits = self.logits.expand(shape)
        u = clamp_probs(_ops.rand(shape, dtype=logits.dtype, device=logits.device))
        scores = (logits - (-u.log()).log()) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        t = self.temperature if not isinstance(self.temperature, Number) else _ops.tensor(float(self.temperature))
        log_scale = math.lgamma(k) + (k - 1) * t.log()
        score = logits - value * t
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(_RelaxedParams, TransformedDistribution):
    """The concrete (Gumbel-softmax) relaxation of a one-hot categorical: values on the
    simplex, reparameterised."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_transformed(self, RelaxedOneHotCategorical, batch_shape, _instance)
