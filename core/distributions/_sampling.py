"""Exact samplers written in ember ops (so they run on every backend), and the implicit
reparameterisation gradient of the gamma draws.

* gamma: Marsaglia and Tsang's squeeze method, every element drawn in parallel and redrawn
  where rejected; shapes below 1 are boosted (draw at a + 1, scale by U^(1/a));
* beta: a ratio of two gammas;
* binomial: counts above a cut-off are split by a beta draw of an order statistic
  (X ~ Beta(m, n + 1 - m) tells how many of the n uniforms fall below p, m - 1 of them or
  more), halving the count each round; below the cut-off, a sum of Bernoulli draws;
* poisson: rates above a cut-off are split by a gamma draw of an arrival time (the m-th
  arrival of a unit-rate process, m = 7/8 of the rate: before the horizon, m events plus a
  Poisson of the rest; after, a binomial of m - 1 over the fraction), then sequential inversion.

The gradient of a standard gamma draw x with respect to its shape a is dx/da = -(dF/da) / f,
F the regularised incomplete gamma function and f the density (the draw is held at its
quantile). dF/da / f is computed from the power series of P(a, x) left of the mode and from
the continued fraction of Q(a, x) right of it, both divided by f analytically (no lgamma
needed), in float64 where the device has it; above a = 500, the Wilson-Hilferty cube-root
normal approximation is differentiated instead.
"""
from __future__ import annotations

import math

from .. import _dtype as _D
from .. import ops as _ops
from ..autograd import Function, no_grad

__all__: list = []

_GAMMA_MAX_ROUNDS = 1000
_BINOMIAL_DIRECT = 32
_POISSON_DIRECT = 16.0
_SERIES_TERMS = 400
_CF_TERMS = 200
_WH_SHAPE = 500.0


def _wide(t):
    """``t`` in float64 when its device has it (else float32)."""
    be = t.device._backend if hasattr(t.device, "_backend") else None
    ok = be is None or be.supports_dtype(_D.float64)
    return t.to(_D.float64 if ok else _D.float32)


def _tiny(t) -> float:
    return _D.finfo(t.dtype).tiny


def standard_gamma(alpha):
    """Gamma(alpha, 1) draws, one per element of ``alpha`` (no gradient)."""
    with no_grad():
        boost = alpha < 1
        a = _ops.where(boost, alpha + 1, alpha)
        d = a - 1.0 / 3.0
        c = (9 * d).rsqrt()
        out = _ops.full_like(a, math.nan)
        pending = a == a
        tiny = _tiny(a)
        for _ in range(_GAMMA_MAX_ROUNDS):
            if not bool(pending.any()):
                break
            z = _ops.randn_like(a)
            v = (1 + c * z) ** 3
            logu = _ops.rand_like(a).clamp(min=tiny).log()
            accept = (v > 0) & (logu < 0.5 * z * z + d - d * v + d * v.clamp(min=tiny).log())
            take = pending & accept
            out = _ops.where(take, d * v, out)
            pending = pending & ~accept
        if bool(boost.any()):
            u = _ops.rand_like(a).clamp(min=tiny)
            out = _ops.where(boost, out * u.pow(alpha.reciprocal()), out)
        return out.clamp(min=tiny)


def beta_draw(a, b):
    """Beta(a, b) draws as ga / (ga + gb) (no gradient)."""
    ga, gb = standard_gamma(a), standard_gamma(b)
    return ga / (ga + gb)


def binomial_draw(count, prob):
    """Binomial(count, prob) draws; ``count`` and ``prob`` float tensors of one shape."""
    with no_grad():
        n = count.clone()
        p = prob.clone()
        got = _ops.zeros_like(p)
        while True:
            big = n > _BINOMIAL_DIRECT
            if not bool(big.any()):
                break
            m = (n / 2).floor() + 1
            x = beta_draw(_ops.where(big, m, 1.0), _ops.where(big, n + 1 - m, 1.0))
            below = x < p  # at least m of the n uniforms fall below p
            got = _ops.where(big & below, got + m, got)
            p_next = _ops.where(below, (p - x) / (1 - x), p / x).clamp(min=0.0, max=1.0)
            n_next = _ops.where(below, n - m, m - 1)
            p = _ops.where(big, p_next, p)
            n = _ops.where(big, n_next, n)
        trials = int(n.max().item()) if n.numel() else 0
        if trials:
            u = _ops.rand(tuple(n.shape) + (trials,), dtype=p.dtype, device=p.device)
            k = _ops.arange(trials, dtype=p.dtype, device=p.device)
            hits = (u < p.unsqueeze(-1)) & (k < n.unsqueeze(-1))
            got = got + hits.to(p.dtype).sum(-1)
        return got


def poisson_draw(rate):
    """Poisson(rate) draws, exact for every rate (no gradient)."""
    with no_grad():
        lam = rate.clone()
        got = _ops.zeros_like(lam)
        while True:
            big = lam > _POISSON_DIRECT
            if not bool(big.any()):
                break
            m = (0.875 * lam).floor()
            g = standard_gamma(_ops.where(big, m, 1.0))
            early = g < lam
            tail = binomial_draw(_ops.where(big & ~early, m - 1, 0.0), (lam / g).clamp(max=1.0))
            got = _ops.where(big & early, got + m, got)
            got = _ops.where(big & ~early, got + tail, got)
            lam = _ops.where(big & early, lam - g, _ops.where(big, 0.0, lam))
        # inversion by sequential search for the rest (rate <= 16)
        u = _ops.rand_like(lam)
        term = (-lam).exp()
        cdf = term.clone()
        k = _ops.zeros_like(lam)
        top = float(lam.max().item()) if lam.numel() else 0.0
        for i in range(1, int(top + 12 * math.sqrt(top + 1) + 20)):
            more = u > cdf
            if not bool(more.any()):
                break
            k = k + more.to(k.dtype)
            term = term * lam / i
            cdf = cdf + term
        return got + k


def _digamma_pos(a):
    """digamma for a > 0 (float64): six steps of the recurrence, then the asymptotic series."""
    shift = _ops.zeros_like(a)
    for j in range(6):
        shift = shift + (a + j).reciprocal()
    z = a + 6
    w = (z * z).reciprocal()
    tail = w * (1 / 12 - w * (1 / 120 - w * (1 / 252 - w * (1 / 240 - w / 132))))
    return z.log() - 0.5 / z - tail - shift


def _series_part(x, a):
    """-(dP/da) / f from P(a, x) = x^a e^-x S / Gamma(a + 1), S = sum_n x^n / ((a+1)...(a+n))."""
    term = _ops.ones_like(x)
    s = _ops.ones_like(x)
    ds = _ops.zeros_like(x)  # dS/da
    harm = _ops.zeros_like(x)
    for n in range(1, _SERIES_TERMS):
        term = term * x / (a + n)
        harm = harm + (a + n).reciprocal()
        s = s + term
        ds = ds - term * harm
    ratio = x * s / a  # P / f
    return -ratio * (x.log() - _digamma_pos(a + 1) + ds / s)


def _cf(x, a):
    """C(a, x) with Q(a, x) = x^a e^-x C / Gamma(a): Legendre's continued fraction (Lentz)."""
    tiny = 1e-300 if x.dtype == _D.float64 else 1e-30
    b = x + 1 - a
    c = _ops.full_like(x, 1 / tiny)
    d = b.reciprocal()
    h = d
    for i in range(1, _CF_TERMS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = _ops.where(d.abs() < tiny, tiny, d).reciprocal()
        c = b + an / c
        c = _ops.where(c.abs() < tiny, tiny, c)
        h = h * d * c
    return h


def _fraction_part(x, a):
    """-(dP/da) / f = (dQ/da) / f = x C (log x - digamma(a) + d log C / da)."""
    c = _cf(x, a)
    step = 1e-5 * (1 + a)
    dlogc = ((_cf(x, a + step)).log() - (_cf(x, a - step)).log()) / (2 * step)
    return x * c * (x.log() - _digamma_pos(a) + dlogc)


def _wilson_hilferty_part(x, a):
    """dx/da with x = a (1 - 1/(9a) + z / (3 sqrt a))^3 at the z that gives x."""
    r = (x / a).pow(1 / 3)
    z = (r - 1 + 1 / (9 * a)) * 3 * a.sqrt()
    dbase = 1 / (9 * a * a) - z / (6 * a.pow(1.5))
    return r.pow(3) + 3 * a * r * r * dbase


def gamma_shape_grad(x, a):
    """dx/da for standard gamma draws ``x`` of shapes ``a``."""
    xw, aw = _wide(x).clamp(min=1e-300 if x.dtype == _D.float64 else 1e-30), _wide(a)
    left = xw < aw + 1
    sx = _ops.where(left, xw, aw + 1)
    fx = _ops.where(left, aw + 2, xw)
    g = _ops.where(left, _series_part(sx, aw), _fraction_part(fx, aw))
    huge = aw > _WH_SHAPE
    if bool(huge.any()):
        g = _ops.where(huge, _wilson_hilferty_part(xw, aw.clamp(min=1.0)), g)
    return g.to(x.dtype)


class _GammaDraw(Function):
    """Standard gamma draws, differentiable in the shape by implicit differentiation."""

    @staticmethod
    def forward(ctx, alpha):
        x = standard_gamma(alpha.detach())
        ctx.save_for_backward(x, alpha)
        return x

    @staticmethod
    def backward(ctx, grad):
        x, alpha = ctx.saved_tensors
        return grad * gamma_shape_grad(x.detach(), alpha.detach())


def standard_gamma_rsample(alpha):
    """Gamma(alpha, 1) draws that carry the implicit gradient to ``alpha``."""
    if alpha.requires_grad:
        return _GammaDraw.apply(alpha)
    return standard_gamma(alpha)
