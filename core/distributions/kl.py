"""KL divergence KL(p || q) with a registry of closed forms keyed by the pair of classes.

``register_kl(P, Q)`` decorates a function of ``(p, q)``; ``kl_divergence`` picks the most
specific registered pair for ``(type(p), type(q))`` (nearest in both method resolution orders),
and falls back to the Bregman divergence of the log-normaliser for two members of one
exponential family.
"""
from __future__ import annotations

import math

from .. import linalg as _linalg
from .. import ops as _ops
from ..autograd import enable_grad
from ..autograd import grad as _grad
from ._transform_base import sum_rightmost
from .continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from .derived import Gumbel, HalfNormal, LogNormal
from .discrete import Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical, Poisson
from .distribution import Distribution, ExponentialFamily
from .gamma_family import Beta, Dirichlet, Gamma
from .multivariate import LowRankMultivariateNormal, MultivariateNormal
from .utils import euler_constant
from .wrappers import Independent, TransformedDistribution

__all__ = ["kl_divergence", "register_kl"]

_REGISTRY: dict = {}
_CHOICE: dict = {}


def register_kl(type_p, type_q):
    """Register the decorated function as KL(p || q) for ``p`` of class ``type_p`` and ``q``
    of class ``type_q`` (subclasses included, unless a closer pair is registered)."""
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fn):
        _REGISTRY[type_p, type_q] = fn
        _CHOICE.clear()
        return fn

    return decorator


def _lookup(tp, tq):
    key = (tp, tq)
    if key not in _CHOICE:
        best, rank = None, None
        for (a, b), fn in _REGISTRY.items():
            if issubclass(tp, a) and issubclass(tq, b):
                r = (tp.__mro__.index(a) + tq.__mro__.index(b), tp.__mro__.index(a))
                if rank is None or r < rank:
                    best, rank = fn, r
        _CHOICE[key] = best
    return _CHOICE[key]


def kl_divergence(p: Distribution, q: Distribution):
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the distributions' batch shape."""
    fn = _lookup(type(p), type(q))
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fn(p, q)


def _inf_like(t):
    return _ops.full_like(t, math.inf)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_bregman(p, q):
    """The Bregman divergence of the log-normaliser A: A(eta_q) - A(eta_p) - <eta_q - eta_p, grad A(eta_p)>."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot "
                                  "                            be computed using Bregman divergences")
    eta_p = [t.detach().requires_grad_() for t in p._natural_params]
    eta_q = q._natural_params
    with enable_grad():
        a_p = p._log_normalizer(*eta_p)
        grads = _grad(a_p.sum(), eta_p, create_graph=True)
    out = q._log_normalizer(*eta_q) - a_p
    n = len(q.event_shape)
    for ep, eq, g in zip(eta_p, eta_q, grads):
        out = out - sum_rightmost((eq - ep) * g, n)
    return out


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    ratio = (p.scale / q.scale).pow(2)
    gap = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (ratio + gap - 1 - ratio.log())


@register_kl(LogNormal, LogNormal)
@register_kl(HalfNormal, HalfNormal)
def _kl_through_base(p, q):
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    a, b = p.probs, q.probs
    return (_ops.xlogy(a, a) - _ops.xlogy(a, b)) + (_ops.xlogy(1 - a, 1 - a) - _ops.xlogy(1 - a, 1 - b))


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * _kl_bernoulli_bernoulli(p, q)
    return _ops.where(p.total_count > q.total_count, math.inf, kl)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _ops.where(q.probs == 0, math.inf, t)
    t = _ops.where(p.probs == 0, 0.0, t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return _ops.xlogy(p.rate, p.rate) - _ops.xlogy(p.rate, q.rate) - (p.rate - q.rate)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    r = q.rate / p.rate
    return r - 1 - r.log()


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    ratio = p.scale / q.scale
    gap = (p.loc - q.loc).abs()
    return -ratio.log() + gap / q.scale + ratio * (-gap / p.scale).exp() - 1


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    num = (p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)
    return (num / (4 * p.scale * q.scale)).log()


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    r = p.scale / q.scale
    shift = (p.loc - q.loc) / q.scale
    return -r.log() - euler_constant * (1 - r) + shift + (-shift).exp() * _ops.lgamma(r + 1).exp() - 1


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    out = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low) | (q.high < p.high)
    return _ops.where(outside, math.inf, out)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    a1, b1, a2, b2 = p.concentration, p.rate, q.concentration, q.rate
    return ((a1 - a2) * _ops.digamma(a1) - _ops.lgamma(a1) + _ops.lgamma(a2) + a2 * (b1.log() - b2.log())
            + a1 * (b2 / b1 - 1))


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    return _kl_dirichlet_dirichlet(p._dirichlet, q._dirichlet)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    a, b = p.concentration, q.concentration
    a0 = a.sum(-1)
    gap = ((a - b) * (_ops.digamma(a) - _ops.digamma(a0).unsqueeze(-1))).sum(-1)
    return _ops.lgamma(a0) - _ops.lgamma(b.sum(-1)) - _ops.lgamma(a).sum(-1) + _ops.lgamma(b).sum(-1) + gap


def _tril_of(d):
    return d._unbroadcasted_scale_tril if isinstance(d, MultivariateNormal) else _linalg.cholesky(d.covariance_matrix)


@register_kl(MultivariateNormal, MultivariateNormal)
@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    lp, lq = _tril_of(p), _tril_of(q)
    n = p.event_shape[0]
    batch = _ops.broadcast_shapes(lp.shape[:-2], lq.shape[:-2], p.loc.shape[:-1], q.loc.shape[:-1])
    lp = lp.expand(tuple(batch) + (n, n))
    lq = lq.expand(tuple(batch) + (n, n))
    half_logdet = (_ops.diagonal(lq, 0, -2, -1).log().sum(-1) - _ops.diagonal(lp, 0, -2, -1).log().sum(-1))
    trace = _linalg.solve_triangular(lq, lp, upper=False).pow(2).sum((-2, -1))
    diff = (q.loc - p.loc).expand(tuple(batch) + (n,)).unsqueeze(-1)
    maha = _linalg.solve_triangular(lq, diff, upper=False).pow(2).sum((-2, -1))
    return half_logdet + 0.5 * (trace + maha - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)
