"""Draws of ember.distributions: sample statistics against the exact moments and CDFs with
fixed seeds, tolerances of 5 standard errors from the sample size; reparameterised gradients
(including the implicit gamma-shape gradient); a few checks on the opencl device."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import distributions as D
from opencl_probe import opencl_available as _opencl_available

T = ember.tensor
N = 20000


def _f(x):
    return np.asarray(x.detach().numpy(), dtype=np.float64)


def _check_mean_var(x, mean, var):
    """|sample mean - mean| and |sample variance - var| within 5 standard errors."""
    n = x.shape[0]
    assert (abs(x.mean(0) - mean) <= 5 * np.sqrt(var / n) + 1e-12).all(), (x.mean(0), mean)
    m4 = ((x - x.mean(0)) ** 4).mean(0)
    se_var = np.sqrt(np.maximum(m4 - var ** 2, 1e-30) / n)
    assert (abs(x.var(0) - var) <= 5 * se_var + 1e-12).all(), (x.var(0), var)


FAMILIES = [
    ("Normal", lambda: D.Normal(T([0.5, -2.0]), T([1.5, 0.2]))),
    ("Laplace", lambda: D.Laplace(T([0.5, -2.0]), T([1.5, 0.2]))),
    ("Exponential", lambda: D.Exponential(T([0.5, 4.0]))),
    ("Uniform", lambda: D.Uniform(T([0.5, -2.0]), T([1.5, 3.0]))),
    ("Gamma", lambda: D.Gamma(T([0.3, 1.0, 7.5]), T([1.0, 2.0, 0.5]))),
    ("Chi2", lambda: D.Chi2(T([1.0, 6.0]))),
    ("Beta", lambda: D.Beta(T([0.4, 2.0, 5.0]), T([0.6, 3.0, 1.0]))),
    ("StudentT", lambda: D.StudentT(T([6.0, 9.0]), T([0.5, 0.0]), T([1.0, 2.0]))),
    ("FisherSnedecor", lambda: D.FisherSnedecor(T([5.0, 10.0]), T([12.0, 20.0]))),
    ("LogNormal", lambda: D.LogNormal(T([0.1, -1.0]), T([0.3, 0.5]))),
    ("HalfNormal", lambda: D.HalfNormal(T([1.0, 3.0]))),
    ("Gumbel", lambda: D.Gumbel(T([0.5, -2.0]), T([1.5, 0.2]))),
    ("Weibull", lambda: D.Weibull(T([1.0, 2.0]), T([1.5, 3.0]))),
    ("Pareto", lambda: D.Pareto(T([1.0, 2.0]), T([5.0, 6.0]))),
    ("Kumaraswamy", lambda: D.Kumaraswamy(T([2.0, 0.7]), T([3.0, 1.5]))),
    ("ContinuousBernoulli", lambda: D.ContinuousBernoulli(T([0.2, 0.4999, 0.8]))),
    ("InverseGamma", lambda: D.InverseGamma(T([6.0, 9.0]), T([1.0, 2.0]))),
    ("GeneralizedPareto", lambda: D.GeneralizedPareto(T([0.0, 1.0]), T([1.0, 2.0]), T([0.1, -0.3]))),
    ("Bernoulli", lambda: D.Bernoulli(T([0.1, 0.5, 0.9]))),
    ("Geometric", lambda: D.Geometric(T([0.2, 0.7]))),
    ("Poisson", lambda: D.Poisson(T([0.3, 4.0, 15.0, 40.0, 700.0]))),
    ("Binomial", lambda: D.Binomial(T([5.0, 30.0, 100.0, 1000.0]), T([0.3, 0.5, 0.02, 0.9]))),
    ("NegativeBinomial", lambda: D.NegativeBinomial(T([2.5, 10.0]), T([0.3, 0.6]))),
    ("VonMises-variance-free", lambda: D.VonMises(T([0.5, -1.0]), T([4.0, 30.0]))),
]


@pytest.mark.parametrize("name,make", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_sample_mean_and_variance(name, make):
    ember.manual_seed(1234)
    d = make()
    x = _f(d.sample((N,)))
    assert x.shape == (N,) + tuple(d.batch_shape)
    if name.startswith("VonMises"):
        # circular moments: E[cos(x - loc)] = I1(k) / I0(k)
        loc = _f(d.loc)
        c = np.cos(x - loc)
        r = 1 - _f(d.variance)
        assert (abs(c.mean(0) - r) <= 5 * c.std(0) / math.sqrt(N)).all()
        assert ((x >= -math.pi) & (x < math.pi)).all()
        return
    _check_mean_var(x, _f(d.mean), _f(d.variance))
    assert bool(d.support.check(T(x)).all())


@pytest.mark.parametrize("name,make", [f for f in FAMILIES if f[0] in
                                       ("Normal", "Laplace", "Exponential", "Gamma", "Gumbel", "Weibull",
                                        "HalfNormal", "LogNormal", "Kumaraswamy", "Pareto")],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_sample_cdf_at_quantiles(name, make):
    """The fraction of draws below the q-quantile is q within 5 standard errors."""
    ember.manual_seed(99)
    d = make()
    x = d.sample((N,))
    for q in (0.05, 0.3, 0.5, 0.8, 0.97):
        try:
            level = d.icdf(ember.full(tuple(d.batch_shape), q, dtype=x.dtype))
        except NotImplementedError:
            xs = np.sort(_f(x), 0)
            level = T(xs[int(q * N)])
            got = _f(d.cdf(level))
            assert (abs(got - q) <= 5 * math.sqrt(q * (1 - q) / N)).all()
            continue
        frac = _f((x <= level).to(ember.float64).mean(0))
        assert (abs(frac - q) <= 5 * math.sqrt(q * (1 - q) / N)).all(), (q, frac)


def test_categorical_multinomial_frequencies():
    ember.manual_seed(7)
    p = np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]])
    idx = _f(D.Categorical(T(p)).sample((N,)))
    for b in range(2):
        freq = np.bincount(idx[:, b].astype(int), minlength=3) / N
        assert (abs(freq - p[b]) <= 5 * np.sqrt(p[b] * (1 - p[b]) / N)).all()
    oh = _f(D.OneHotCategorical(T(p)).sample((N,)))
    assert (oh.sum(-1) == 1).all()
    assert (abs(oh.mean(0) - p) <= 5 * np.sqrt(p * (1 - p) / N)).all()
    counts = _f(D.Multinomial(40, T(p)).sample((N,)))
    assert (counts.sum(-1) == 40).all()
    _check_mean_var(counts, 40 * p, 40 * p * (1 - p))


def test_dirichlet_and_mvn_draws():
    ember.manual_seed(3)
    a = np.array([0.5, 2.0, 3.5])
    x = _f(D.Dirichlet(T(a)).sample((N,)))
    assert np.allclose(x.sum(-1), 1)
    a0 = a.sum()
    _check_mean_var(x, a / a0, a * (a0 - a) / (a0 ** 2 * (a0 + 1)))
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    y = _f(D.MultivariateNormal(T([1.0, -1.0], dtype=ember.float64), T(cov)).sample((N,)))
    _check_mean_var(y, np.array([1.0, -1.0]), np.diag(cov))
    prod = (y[:, 0] - 1) * (y[:, 1] + 1)
    assert abs(prod.mean() - 0.6) <= 5 * prod.std() / math.sqrt(N)
    w, dg = np.array([[1.0], [0.5]]), np.array([0.7, 0.4])
    z = _f(D.LowRankMultivariateNormal(T([0.0, 0.0], dtype=ember.float64), T(w), T(dg)).sample((N,)))
    _check_mean_var(z, np.zeros(2), (w ** 2).sum(-1) + dg)


def test_wishart_draws_and_gradient():
    ember.manual_seed(6)
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    w = D.Wishart(T(5.0, dtype=ember.float64), covariance_matrix=T(cov))
    x = _f(w.sample((N,))).reshape(N, 4)
    _check_mean_var(x, (5 * cov).ravel(), _f(w.variance).ravel())
    assert bool(D.constraints.positive_definite.check(T(x[:50].reshape(50, 2, 2))).all())
    df = T(5.0, dtype=ember.float64, requires_grad=True)
    draws = D.Wishart(df, covariance_matrix=T(cov)).rsample((N,))
    (g,) = ember.autograd.grad(draws.mean(0).sum(), df)  # d/ddf of E[X].sum() = cov.sum()
    assert float(g) == pytest.approx(cov.sum(), rel=0.05)


def test_lkj_cholesky_draws():
    """Every off-diagonal correlation of LKJ(eta) in d dims has mean 0 and variance 1 / (2 eta + d - 1)."""
    ember.manual_seed(8)
    for dim, eta in ((2, 1.0), (3, 2.0), (5, 0.7)):
        L = D.LKJCholesky(dim, T(eta, dtype=ember.float64)).sample((N,))
        assert bool(D.constraints.corr_cholesky.check(L).all())
        r = _f(L @ L.mT)
        rows, cols = np.tril_indices(dim, -1)
        corr = r[:, rows, cols]
        _check_mean_var(corr, np.zeros(len(rows)), np.full(len(rows), 1 / (2 * eta + dim - 1)))


def test_mixture_and_relaxed_draws():
    ember.manual_seed(5)
    mix = D.MixtureSameFamily(D.Categorical(T([0.3, 0.7])), D.Normal(T([-2.0, 3.0]), T([0.5, 1.0])))
    x = _f(mix.sample((N,)))
    _check_mean_var(x, float(mix.mean), float(mix.variance))
    rb = D.RelaxedBernoulli(T(0.05), probs=T([0.2, 0.7]))
    y = _f(rb.sample((N,)))
    assert ((y > 0) & (y < 1)).all()
    hard = (y > 0.5).mean(0)  # at a low temperature, close to Bernoulli(p)
    assert (abs(hard - np.array([0.2, 0.7])) < 0.02).all()
    ro = D.RelaxedOneHotCategorical(T(0.05), probs=T([0.1, 0.6, 0.3]))
    z = _f(ro.sample((N,)))
    assert np.allclose(z.sum(-1), 1)
    assert (abs(np.bincount(z.argmax(-1), minlength=3) / N - np.array([0.1, 0.6, 0.3])) < 0.02).all()


# ---- reparameterised gradients --------------------------------------------------------------------

def _mean_grad(make, param_value, n=N, power=1):
    """d/dtheta of the sample mean of x**power, and the per-draw gradient's standard error."""
    theta = T(param_value, dtype=ember.float64, requires_grad=True)
    x = make(theta).rsample((n,))
    grads = []
    for chunk in x.pow(power).split(n // 10):
        (g,) = ember.autograd.grad(chunk.mean(), theta, retain_graph=True)
        grads.append(float(g))
    return float(np.mean(grads)), float(np.std(grads) / math.sqrt(len(grads)))


@pytest.mark.parametrize("case", [
    ("Gamma-shape", lambda a: D.Gamma(a, 2.0), 0.4, 1, lambda a: 1 / 2.0),
    ("Gamma-shape-large", lambda a: D.Gamma(a, 2.0), 6.0, 1, lambda a: 1 / 2.0),
    ("Gamma-second-moment", lambda a: D.Gamma(a, 1.0), 2.5, 2, lambda a: 2 * a + 1),
    ("Gamma-rate", lambda b: D.Gamma(2.5, b), 1.5, 1, lambda b: -2.5 / b ** 2),
    ("Beta", lambda a: D.Beta(a, 3.0), 2.0, 1, lambda a: 3.0 / (a + 3.0) ** 2),
    ("Dirichlet", lambda a: D.Dirichlet(ember.stack([a, T(1.0, dtype=ember.float64), T(2.0, dtype=ember.float64)])),
     1.5, 1, lambda a: np.array([3.0 / 4.5 ** 2, -1 / 4.5 ** 2, -2 / 4.5 ** 2])),
    ("Chi2", lambda k: D.Chi2(k), 3.0, 1, lambda k: 1.0),
    ("StudentT-scale", lambda s: D.StudentT(5.0, 0.0, s), 1.5, 2, lambda s: 2 * s * 5 / 3),
    ("Normal-scale", lambda s: D.Normal(0.0, s), 1.5, 2, lambda s: 2 * s),
    ("Laplace-scale", lambda s: D.Laplace(0.0, s), 1.5, 2, lambda s: 4 * s),
    ("Exponential-rate", lambda r: D.Exponential(r), 2.0, 1, lambda r: -1 / r ** 2),
    ("LogNormal-loc", lambda m: D.LogNormal(m, 0.5), 0.3, 1, lambda m: math.exp(m + 0.125)),
    ("Kumaraswamy-a", lambda a: D.Kumaraswamy(a, 2.0), 2.0, 1, None),
], ids=lambda c: c[0])
def test_rsample_gradient_matches_derivative_of_the_mean(case):
    name, make, value, power, exact = case
    ember.manual_seed(11)
    if name == "Dirichlet":
        theta = T(value, dtype=ember.float64, requires_grad=True)
        x = make(theta).rsample((N,))
        for i, want in enumerate(exact(value)):
            (g,) = ember.autograd.grad(x[:, i].mean(), theta, retain_graph=True)
            assert float(g) == pytest.approx(want, abs=0.01)
        return
    got, se = _mean_grad(make, value, power=power)
    if exact is None:  # d/da of E[X] by a central difference of the closed-form mean
        h = 1e-5
        exact_value = (float(make(T(value + h, dtype=ember.float64)).mean)
                       - float(make(T(value - h, dtype=ember.float64)).mean)) / (2 * h)
    else:
        exact_value = exact(value)
    assert abs(got - exact_value) <= 5 * se + 0.01 * abs(exact_value), (got, exact_value, se)


def test_gamma_shape_gradient_is_implicit_derivative():
    """dx/da of a gamma draw equals -(dF/da) / f at the draw, F and f the CDF and density."""
    ember.manual_seed(2)
    a = T([0.3, 1.0, 4.0, 40.0], dtype=ember.float64, requires_grad=True)
    x = D.Gamma(a, 1.0).rsample()
    (g,) = ember.autograd.grad(x.sum(), a)
    h = 1e-6
    xd, ad = x.detach(), a.detach()
    dF = (D.Gamma(ad + h, 1.0).cdf(xd) - D.Gamma(ad - h, 1.0).cdf(xd)) / (2 * h)
    pdf = D.Gamma(ad, 1.0).log_prob(xd).exp()
    np.testing.assert_allclose(_f(g), _f(-dF / pdf), rtol=1e-5)


def test_sample_has_no_gradient_and_rsample_flags():
    loc = T([0.0, 1.0], requires_grad=True)
    assert not D.Normal(loc, 1.0).sample().requires_grad
    assert D.Normal(loc, 1.0).rsample().requires_grad
    assert D.Normal.has_rsample and D.Gamma.has_rsample and not D.Poisson.has_rsample
    assert not D.Bernoulli.has_rsample and D.RelaxedBernoulli.has_rsample
    p = T([0.2, 0.8], requires_grad=True)
    st = D.OneHotCategoricalStraightThrough(probs=p).rsample((3,))
    assert (st.detach().sum(-1) == 1).all()
    (g,) = ember.autograd.grad((st * T([1.0, 2.0])).sum(), p)
    np.testing.assert_allclose(_f(g), [3.0 - 3 * (0.2 + 1.6), 6.0 - 3 * (0.2 + 1.6)], rtol=1e-5)
    with pytest.raises(NotImplementedError):
        D.Poisson(T([1.0])).rsample()


# ---- the opencl device ---------------------------------------------------------------------------

needs_opencl = pytest.mark.skipif(not _opencl_available(),
                                  reason="needs the opencl backend with pyopencl and an OpenCL device")


@needs_opencl
def test_opencl_normal_gamma_log_prob_and_draws():
    loc = T([0.5, -1.0], device="opencl")
    d = D.Normal(loc, T([1.0, 2.0], device="opencl"))
    lp = d.log_prob(T([0.0, 0.0], device="opencl"))
    assert lp.device.type == "opencl"
    ref = [-0.5 * 0.25 - 0.5 * math.log(2 * math.pi), -0.5 * 0.25 - math.log(2) - 0.5 * math.log(2 * math.pi)]
    np.testing.assert_allclose(_f(lp.cpu()), ref, rtol=1e-5)
    ember.manual_seed(0)
    g = D.Gamma(T([0.5, 3.0], device="opencl"), T([1.0, 1.0], device="opencl")).sample((4000,))
    assert g.device.type == "opencl"
    x = _f(g.cpu())
    assert (abs(x.mean(0) - [0.5, 3.0]) <= 5 * np.sqrt(np.array([0.5, 3.0]) / 4000)).all()


@needs_opencl
def test_opencl_categorical_kl_and_mvn():
    p = D.Categorical(T([[0.2, 0.8], [0.5, 0.5]], device="opencl"))
    q = D.Categorical(T([[0.5, 0.5], [0.9, 0.1]], device="opencl"))
    kl = D.kl_divergence(p, q)
    assert kl.device.type == "opencl"
    ref = [0.2 * math.log(0.4) + 0.8 * math.log(1.6), 0.5 * math.log(0.5 / 0.9) + 0.5 * math.log(5)]
    np.testing.assert_allclose(_f(kl.cpu()), ref, rtol=1e-5)
    s = p.sample((100,))
    assert s.device.type == "opencl" and tuple(s.shape) == (100, 2)
