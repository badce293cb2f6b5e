"""KL divergences between different families, written as KL(p || q) = -H(p) - E_p[log q(X)]
with the expectation from p's moments (E X, Var X, E log X, the moment generating function),
and +inf where p puts mass outside q's support."""
from __future__ import annotations

import math

from .. import _dtype as _D
from .. import ops as _ops
from .continuous import Exponential, Laplace, Normal, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .derived import Gumbel, Pareto
from .discrete import Bernoulli, Binomial, Poisson
from .gamma_family import Beta, Gamma
from .kl import register_kl
from .utils import euler_constant

__all__: list = []

_EULER = euler_constant
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _infinite(p, q):
    return _ops.full(_ops.broadcast_shapes(p.batch_shape, q.batch_shape), math.inf,
                     dtype=_dtype_of(p), device=_device_of(p))


def _dtype_of(d):
    return d.mean.dtype


def _device_of(d):
    return d.mean.device


# p's support is not inside q's: the divergence is infinite
for _p, _qs in ((Normal, (Beta, Exponential, Gamma, Pareto, Uniform)),
                (Gumbel, (Beta, Exponential, Gamma, Pareto, Uniform)),
                (Laplace, (Beta, Exponential, Gamma, Pareto, Uniform)),
                (Exponential, (Beta, Pareto, Uniform)),
                (Gamma, (Beta, Pareto, Uniform)),
                (Beta, (Pareto,)),
                (Pareto, (Beta, Uniform)),
                (Poisson, (Bernoulli, Binomial)),
                (ContinuousBernoulli, (Pareto,)),
                (Exponential, (ContinuousBernoulli,)), (Gamma, (ContinuousBernoulli,)),
                (Gumbel, (ContinuousBernoulli,)), (Laplace, (ContinuousBernoulli,)),
                (Normal, (ContinuousBernoulli,)), (Pareto, (ContinuousBernoulli,))):
    for _q in _qs:
        register_kl(_p, _q)(_infinite)


# ---- E_p of the pieces of log q -----------------------------------------------------------------

def _second_moment_about(p, centre):
    """E_p[(X - centre)^2] = Var + (E X - centre)^2."""
    return p.variance + (p.mean - centre).pow(2)


def _log_normal_q(p, q):
    return -q.scale.log() - _HALF_LOG_2PI - _second_moment_about(p, q.loc) / (2 * q.scale.pow(2))


def _mean_log(p):
    """E_p[log X] for families on the positive half-line."""
    if isinstance(p, Beta):
        return _ops.digamma(p.concentration1) - _ops.digamma(p.concentration1 + p.concentration0)
    if isinstance(p, Exponential):
        return -_EULER - p.rate.log()
    if isinstance(p, Gamma):
        return _ops.digamma(p.concentration) - p.rate.log()
    if isinstance(p, Pareto):
        return p.scale.log() + p.alpha.reciprocal()
    if isinstance(p, Uniform):
        lo, hi = p.low, p.high
        return (_ops.xlogy(hi, hi) - _ops.xlogy(lo, lo)) / (hi - lo) - 1
    raise NotImplementedError


def _mgf(p, t):
    """E_p[exp(t X)] for a number t < 0."""
    if isinstance(p, Normal):
        return (t * p.loc + 0.5 * t * t * p.scale.pow(2)).exp()
    if isinstance(p, Exponential):
        return p.rate / (p.rate - t)
    if isinstance(p, Gamma):
        return (p.rate / (p.rate - t)).pow(p.concentration)
    if isinstance(p, Uniform):
        return ((t * p.high).exp() - (t * p.low).exp()) / (t * (p.high - p.low))
    raise NotImplementedError


def _mgf_scaled(p, scale):
    """E_p[exp(-X / scale)] with a tensor scale."""
    if isinstance(p, Normal):
        return (-p.loc / scale + 0.5 * (p.scale / scale).pow(2)).exp()
    if isinstance(p, Exponential):
        return p.rate / (p.rate + scale.reciprocal())
    if isinstance(p, Gamma):
        return (p.rate / (p.rate + scale.reciprocal())).pow(p.concentration)
    if isinstance(p, Uniform):
        return scale * ((-p.low / scale).exp() - (-p.high / scale).exp()) / (p.high - p.low)
    raise NotImplementedError


# ---- q Normal ------------------------------------------------------------------------------------

@register_kl(Beta, Normal)
@register_kl(Exponential, Normal)
@register_kl(Gamma, Normal)
@register_kl(Gumbel, Normal)
@register_kl(Laplace, Normal)
@register_kl(Uniform, Normal)
def _kl_any_normal(p, q):
    return -p.entropy() - _log_normal_q(p, q)


@register_kl(ContinuousBernoulli, Normal)
def _kl_cb_normal(p, q):
    return -p.entropy() - _log_normal_q(p, q)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    kl = -p.entropy() - _log_normal_q(p, q)
    return _ops.where(p.alpha > 2, kl, math.inf)


# ---- q Exponential / Gamma -----------------------------------------------------------------------

def _positive_support(p):
    """True where p's support lies in [0, inf)."""
    if isinstance(p, Uniform):
        return p.low >= 0
    return _ops.ones_like(p.mean, dtype=_D.bool)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_cb_exponential(p, q):
    return -p.entropy() - (q.rate.log() - q.rate * p.mean)


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p, q):
    kl = -p.entropy() + (q.high - q.low).log()
    return _ops.where((q.low > 0) | (q.high < 1), math.inf, kl)


def _log_cb_q(mean, q):
    """E[log q(X)] for q continuous Bernoulli: log q is linear in x."""
    return q._log_norm() + mean * q.probs.log() + (1 - mean) * (-q.probs).log1p()


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_cb(p, q):
    return -p.entropy() - _log_cb_q(p.mean, q)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cb(p, q):
    kl = -p.entropy() - _log_cb_q(p.mean, q)
    return _ops.where((p.low < 0) | (p.high > 1), math.inf, kl)


@register_kl(Beta, Exponential)
@register_kl(Gamma, Exponential)
@register_kl(Uniform, Exponential)
@register_kl(Pareto, Exponential)
def _kl_positive_exponential(p, q):
    kl = -p.entropy() - (q.rate.log() - q.rate * p.mean)
    ok = _positive_support(p)
    if isinstance(p, Pareto):
        ok = p.alpha > 1
    return _ops.where(ok, kl, math.inf)


@register_kl(Beta, Gamma)
@register_kl(Exponential, Gamma)
@register_kl(Uniform, Gamma)
@register_kl(Pareto, Gamma)
def _kl_positive_gamma(p, q):
    a, b = q.concentration, q.rate
    expect = a * b.log() + (a - 1) * _mean_log(p) - b * p.mean - _ops.lgamma(a)
    kl = -p.entropy() - expect
    ok = _positive_support(p)
    if isinstance(p, Pareto):
        ok = p.alpha > 1
    if isinstance(p, Uniform):
        ok = ok & ((p.low > 0) | (a >= 1))
    return _ops.where(ok, kl, math.inf)


# ---- q Gumbel ------------------------------------------------------------------------------------

@register_kl(Exponential, Gumbel)
@register_kl(Gamma, Gumbel)
@register_kl(Normal, Gumbel)
@register_kl(Uniform, Gumbel)
def _kl_any_gumbel(p, q):
    # log q(x) = -log s - (x - m) / s - exp(-(x - m) / s)
    m, s = q.loc, q.scale
    expect = -s.log() - (p.mean - m) / s - (m / s).exp() * _mgf_scaled(p, s)
    return -p.entropy() - expect


# ---- q Laplace, q Uniform, q Beta, q Pareto, q Poisson --------------------------------------------

@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    d = p.loc - q.loc
    s = p.scale
    folded = s * math.sqrt(2 / math.pi) * (-(d / s).pow(2) / 2).exp() + d * _ops.erf(d / (s * math.sqrt(2)))
    return -p.entropy() + (2 * q.scale).log() + folded / q.scale


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    kl = -p.entropy() + (q.high - q.low).log()
    return _ops.where((q.low > 0) | (q.high < 1), math.inf, kl)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    a, b = q.concentration1, q.concentration0
    lo, hi = p.low, p.high
    width = hi - lo
    mean_log_x = (_ops.xlogy(hi, hi) - _ops.xlogy(lo, lo)) / width - 1
    mean_log_1mx = (_ops.xlogy(1 - lo, 1 - lo) - _ops.xlogy(1 - hi, 1 - hi)) / width - 1
    log_beta = _ops.lgamma(a) + _ops.lgamma(b) - _ops.lgamma(a + b)
    kl = -width.log() - (a - 1) * mean_log_x - (b - 1) * mean_log_1mx + log_beta
    return _ops.where((lo < 0) | (hi > 1), math.inf, kl)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    expect = q.alpha.log() + q.alpha * q.scale.log() - (q.alpha + 1) * _mean_log(p)
    kl = -(p.high - p.low).log() - expect
    return _ops.where(p.low < q.scale, math.inf, kl)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)
