"""Discrete families given by probabilities or logits: Bernoulli, Binomial, Categorical,
OneHotCategorical, Multinomial, Geometric, NegativeBinomial, and Poisson."""
from __future__ import annotations

import math
from numbers import Number

from .. import _dtype as _D
from .. import ops as _ops
from .._tensor import Size
from ..autograd import no_grad
from ..nn import functional as _F
from . import _sampling
from . import constraints
from .distribution import Distribution, ExponentialFamily
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli", "Binomial", "Categorical", "Geometric", "Multinomial", "NegativeBinomial",
           "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson"]


def _one_of(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _validated(d, value):
    if d._validate_args:
        d._validate_sample(value)
    return value


def _lgamma(t):
    return _ops.lgamma(t)


class _Binary:
    """``probs``/``logits`` of binary events, each computed from the other on first use."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def _take(self, probs, logits):
        _one_of(probs, logits)
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            self._param = self.probs
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        return is_scalar


class Bernoulli(_Binary, ExponentialFamily):
    """1 with probability ``probs`` (or sigmoid(``logits``)), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        scalar = self._take(probs, logits)
        super().__init__(Size() if scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(Bernoulli, batch_shape, _instance, ("probs", "logits"))
        new._param = new.__dict__["probs" if "probs" in self.__dict__ and self._param is self.probs else "logits"]
        return new

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        m = (self.probs >= 0.5).to(self.probs.dtype)
        return _ops.where(self.probs == 0.5, math.nan, m)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        with no_grad():
            return _ops.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        _validated(self, value)
        logits, value = broadcast_all(self.logits, value)
        return -_F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return _F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        vals = _ops.arange(2, dtype=self._param.dtype, device=self._param.device)
        vals = vals.view((-1,) + (1,) * len(self._batch_shape))
        return vals.expand((-1,) + tuple(self._batch_shape)) if expand else vals

    @property
    def _natural_params(self):
        return (_ops.log(self.probs / (1 - self.probs)),)

    def _log_normalizer(self, x):
        return _ops.log1p(_ops.exp(x))


class Geometric(_Binary, Distribution):
    """The number of failures before the first success, success probability ``probs``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        scalar = self._take(probs, logits)
        super().__init__(Size() if scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(Geometric, batch_shape, _instance, ("probs", "logits"))
        new._param = new.__dict__["probs" if "probs" in self.__dict__ else "logits"]
        return new

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return _ops.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=Size()):
        with no_grad():
            shape = self._extended_shape(sample_shape)
            u = _ops.rand(shape, dtype=self.probs.dtype, device=self.probs.device).clamp(min=_D.finfo(
                self.probs.dtype).tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        _validated(self, value)
        value, probs = broadcast_all(value, self.probs)
        fails = _ops.where((value == 0) & (probs == 1), 0.0, value * (-probs).log1p())
        return fails + probs.log()

    def entropy(self):
        return _F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs

def _set_count_and_param(d, total_count, probs, logits) -> None:
    """The count families' parameters (Binomial, NegativeBinomial): ``total_count`` broadcast
    with whichever of ``probs``/``logits`` is given, in its dtype; ``_param`` is that one."""
    _one_of(probs, logits)
    name, value = ("probs", probs) if probs is not None else ("logits", logits)
    count, param = broadcast_all(total_count, value)
    d.total_count = count.type_as(param)
    setattr(d, name, param)
    d._param = param


def _expand_count_and_param(d, cls, batch_shape, _instance):
    new = d._expand_params(cls, batch_shape, _instance, ("total_count", "probs", "logits"))
    new._param = new.__dict__["probs" if "probs" in d.__dict__ else "logits"]
    return new


class Binomial(_Binary, Distribution):
    """The number of successes in ``total_count`` trials of success probability ``probs``."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _set_count_and_param(self, total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_count_and_param(self, Binomial, batch_shape, _instance)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            n = self.total_count.expand(shape).to(self.probs.dtype)
            return _sampling.binomial_draw(n, self.probs.expand(shape))

    def log_prob(self, value):
        _validated(self, value)
        n, k = self.total_count, value
        log_choose = _lgamma(n + 1) - _lgamma(k + 1) - _lgamma(n - k + 1)
        # k log p + (n - k) log(1 - p) in logits, written so that p = 0 or 1 stays finite
        lg = self.logits
        tail = n * (lg.clamp(min=0) + (-lg.abs()).exp().log1p())  # n softplus(lg)
        body = k * lg - tail
        body = _ops.where((n == k) & (lg == math.inf), 0.0, body)
        return log_choose + body

    def entropy(self):
        n = int(self.total_count.max().item())
        if not bool((self.total_count == n).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        ks = self.enumerate_support(False)
        lp = self.log_prob(ks)
        return -(lp.exp() * lp).sum(0)

    def enumerate_support(self, expand=True):
        n = int(self.total_count.max().item())
        if not bool((self.total_count == n).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        vals = _ops.arange(1 + n, dtype=self._param.dtype, device=self._param.device)
        vals = vals.view((-1,) + (1,) * len(self._batch_shape))
        return vals.expand((-1,) + tuple(self._batch_shape)) if expand else vals


class Categorical(Distribution):
    """One of ``K`` categories (indices ``0 .. K-1``), weights along the last dim of
    ``probs`` (normalised to sum to one) or ``logits`` (normalised log-probabilities)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch = self._param.size()[:-1] if self._param.dim() > 1 else Size()
        super().__init__(batch, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(type(self), batch_shape, _instance, ("probs", "logits"), keep=("_num_events",))
        new._param = new.__dict__["probs" if "probs" in self.__dict__ else "logits"]
        return new

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.size()

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return _ops.full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return _ops.full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    def sample(self, sample_shape=Size()):
        """Inverse-CDF draws: the index of the first cumulative weight above a uniform."""
        with no_grad():
            shape = self._extended_shape(sample_shape)
            cum = self.probs.cumsum(-1)
            u = _ops.rand(tuple(shape) + (1,), dtype=cum.dtype, device=cum.device) * cum[..., -1:]
            idx = (u >= cum).to(_D.int64).sum(-1)
            return idx.clamp(max=self._num_events - 1)

    def log_prob(self, value):
        _validated(self, value)
        value = value.long().unsqueeze(-1)
        value, lp = _ops.broadcast_tensors(value, self.logits)
        return lp.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        lg = self.logits.clamp(min=_D.finfo(self.logits.dtype).min)
        return -(lg * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        vals = _ops.arange(self._num_events, dtype=_D.int64, device=self._param.device)
        vals = vals.view((-1,) + (1,) * len(self._batch_shape))
        return vals.expand((-1,) + tuple(self._batch_shape)) if expand else vals


class OneHotCategorical(Distribution):
    """A categorical draw written as a one-hot vector of length ``K``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(OneHotCategorical, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, Size(batch_shape), self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        return _F.one_hot(self.probs.argmax(-1), self._event_shape[0]).to(self.probs.dtype)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        idx = self._categorical.sample(sample_shape)
        return _F.one_hot(idx, self._event_shape[0]).to(self.probs.dtype)

    def log_prob(self, value):
        _validated(self, value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        k = self._event_shape[0]
        vals = _ops.eye(k, dtype=self._param.dtype, device=self._param.device)
        vals = vals.view((k,) + (1,) * len(self._batch_shape) + (k,))
        return vals.expand((k,) + tuple(self._batch_shape) + (k,)) if expand else vals

    def __repr__(self):
        names = [k for k in ("probs", "logits") if k in self._categorical.__dict__]
        parts = [f"{k}: {self._categorical.__dict__[k].size()}" for k in names]
        return f"OneHotCategorical({', '.join(parts)})"


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose ``rsample`` passes gradients straight through: the one-hot draw
    plus ``probs - probs.detach()`` (the value is the draw, the gradient that of ``probs``)."""

    has_rsample = True

    def rsample(self, sample_shape=Size()):
        draw = self.sample(sample_shape)
        p = self._categorical.probs
        return draw + (p - p.detach())


class Multinomial(Distribution):
    """Counts of ``total_count`` categorical draws, one count per category."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self._categorical.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new._categorical.probs)
        Distribution.__init__(new, Size(batch_shape), self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        """A chain of binomials: category i takes Binomial(n left, p_i / p left)."""
        with no_grad():
            shape = self._extended_shape(sample_shape)
            p = self.probs.expand(shape)
            left_n = _ops.full(shape[:-1], float(self.total_count), dtype=p.dtype, device=p.device)
            left_p = _ops.ones(shape[:-1], dtype=p.dtype, device=p.device)
            counts = []
            for i in range(shape[-1]):
                if i == shape[-1] - 1:
                    c = left_n
                else:
                    q = (p[..., i] / left_p.clamp(min=_D.finfo(p.dtype).tiny)).clamp(min=0.0, max=1.0)
                    c = _sampling.binomial_draw(left_n, q)
                counts.append(c)
                left_n = left_n - c
                left_p = left_p - p[..., i]
            return _ops.stack(counts, -1)

    def log_prob(self, value):
        _validated(self, value)
        logits, value = broadcast_all(self.logits, value)
        logits = logits.clone()
        logits = _ops.where((value == 0) & (logits == -math.inf), 0.0, logits)
        norm = _lgamma(value.sum(-1) + 1) - _lgamma(value + 1).sum(-1)
        return norm + (value * logits).sum(-1)

    def entropy(self):
        n = self.total_count
        support = self._binomial.enumerate_support(False)[1:]  # 1..n: lgamma(1) = 0 drops k = 0
        b = self._binomial.log_prob(support).exp()
        expected = (b * _lgamma(support + 1)).sum(0).sum(-1)
        return n * self._categorical.entropy() - math.lgamma(n + 1) + expected


class Poisson(ExponentialFamily):
    """Counts with mean ``rate``: p(k) = rate^k exp(-rate) / k!."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(Size() if isinstance(rate, Number) else self.rate.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Poisson, batch_shape, _instance, ("rate",))

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=Size()):
        with no_grad():
            return _sampling.poisson_draw(self.rate.expand(self._extended_shape(sample_shape))).to(self.rate.dtype)

    def log_prob(self, value):
        _validated(self, value)
        rate, value = broadcast_all(self.rate, value)
        return _ops.xlogy(value, rate) - rate - _lgamma(value + 1)

    @property
    def _natural_params(self):
        return (self.rate.log(),)

    def _log_normalizer(self, x):
        return x.exp()


class NegativeBinomial(_Binary, Distribution):
    """The number of successes (probability ``probs`` each) before ``total_count`` failures."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        _set_count_and_param(self, total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_count_and_param(self, NegativeBinomial, batch_shape, _instance)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape=Size()):
        """A gamma-Poisson mixture: Poisson(Gamma(total_count, 1) * probs / (1 - probs))."""
        with no_grad():
            shape = self._extended_shape(sample_shape)
            g = _sampling.standard_gamma(self.total_count.expand(shape)) * self.logits.exp().expand(shape)
            return _sampling.poisson_draw(g)

    def log_prob(self, value):
        _validated(self, value)
        r = self.total_count
        body = r * _F.logsigmoid(-self.logits) + value * _F.logsigmoid(self.logits)
        norm = -_lgamma(r + value) + _lgamma(1.0 + value) + _lgamma(r)
        norm = _ops.where(r + value == 0.0, 0.0, norm)
        return body - norm
