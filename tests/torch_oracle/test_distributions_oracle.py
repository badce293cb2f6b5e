"""ember.distributions against PyTorch 2.13 on the same parameters (float64): the deterministic
quantities of every family (mean, mode, variance, stddev, log_prob, cdf, icdf, entropy,
enumerate_support), shapes of draws, KL divergences, and the transforms' forward, inverse and
log |det J|."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

pytestmark = pytest.mark.filterwarnings("ignore")

TD, ED = torch.distributions, ember.distributions
P3 = np.array([0.7, 1.3, 2.5])
Q3 = np.array([0.2, 0.5, 0.9])
SIMPLEX = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])


def _lib(lib, v):
    if isinstance(v, np.ndarray):
        return lib.tensor(v)
    if isinstance(v, dict):
        return {k: _lib(lib, x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_lib(lib, x) for x in v]
    return v


# name, positional args, keyword args, a value in the support (and icdf probabilities where defined)
CASES = [
    ("Normal", (P3 - 1, P3), {}, P3),
    ("LogNormal", (P3 - 1, P3), {}, P3),
    ("Laplace", (P3 - 1, P3), {}, P3),
    ("Cauchy", (P3 - 1, P3), {}, P3),
    ("HalfNormal", (P3,), {}, P3),
    ("HalfCauchy", (P3,), {}, P3),
    ("Uniform", (P3 - 1, P3 + 1), {}, P3),
    ("Exponential", (P3,), {}, P3),
    ("Gamma", (P3, P3 + 0.5), {}, P3),
    ("Chi2", (P3 * 2,), {}, P3),
    ("Beta", (P3, P3 + 0.3), {}, Q3),
    ("Dirichlet", (np.array([[0.5, 1.5, 3.0], [2.0, 2.0, 0.7]]),), {}, SIMPLEX),
    ("StudentT", (P3 + 1, P3 - 1, P3), {}, P3),
    ("FisherSnedecor", (P3 + 2, P3 + 4.5), {}, P3),
    ("Gumbel", (P3 - 1, P3), {}, P3),
    ("Weibull", (P3, P3 + 0.5), {}, P3),
    ("Pareto", (P3, P3 + 0.5), {}, P3 + 1),
    ("Kumaraswamy", (P3 + 0.5, P3 + 1), {}, Q3),
    ("Bernoulli", (Q3,), {}, np.array([0.0, 1.0, 1.0])),
    ("Bernoulli", (), {"logits": P3 - 1}, np.array([0.0, 1.0, 0.0])),
    ("Geometric", (Q3,), {}, np.array([0.0, 1.0, 3.0])),
    ("Binomial", (5.0, Q3), {}, np.array([0.0, 3.0, 5.0])),
    ("Binomial", (np.array([3.0, 7.0, 10.0]),), {"logits": P3 - 1}, np.array([1.0, 3.0, 10.0])),
    ("NegativeBinomial", (P3 * 2, Q3 * 0.9), {}, np.array([0.0, 3.0, 5.0])),
    ("Poisson", (P3 * 3,), {}, np.array([0.0, 3.0, 5.0])),
    ("Categorical", (SIMPLEX,), {}, np.array([0.0, 2.0])),
    ("Categorical", (), {"logits": SIMPLEX * 3}, np.array([1.0, 0.0])),
    ("OneHotCategorical", (SIMPLEX,), {}, np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])),
    ("Multinomial", (4, SIMPLEX), {}, np.array([[1.0, 1.0, 2.0], [0.0, 4.0, 0.0]])),
    ("MultivariateNormal", (np.zeros(3),), {"covariance_matrix": COV}, P3),
    ("MultivariateNormal", (np.ones((2, 3)),), {"precision_matrix": COV}, P3),
    ("MultivariateNormal", (np.zeros(3),), {"scale_tril": np.linalg.cholesky(COV)}, P3),
    ("LowRankMultivariateNormal", (np.zeros(3), np.array([[1.0], [0.5], [-0.3]]), P3), {}, P3),
    ("LogisticNormal", (P3 - 1, P3), {}, np.array([0.1, 0.2, 0.3, 0.4])),
    ("VonMises", (P3 - 1, P3), {}, P3),
    ("Wishart", (np.array([2.5, 4.0, 6.0]),), {"covariance_matrix": COV}, COV + np.eye(3)),
    ("Wishart", (5.0,), {"precision_matrix": COV}, COV + np.eye(3)),
    ("Wishart", (np.array([3.5, 7.0]),), {"scale_tril": np.linalg.cholesky(COV)}, COV),
    ("InverseGamma", (P3 + 2, P3), {}, P3),
    ("InverseGamma", (P3, P3), {}, P3),
    # float32: PyTorch 2.13's GeneralizedPareto.log_prob and cdf fail on float64 parameters
    ("GeneralizedPareto", (np.float32(P3 - 1), np.float32(P3), np.float32([0.0, 0.3, -0.2])), {},
     np.float32(P3)),
    ("GeneralizedPareto", (np.float32(P3 - 1), np.float32(P3), np.float32([0.7, 1.2, -0.9])), {},
     np.float32(P3 - 0.5)),
    ("OneHotCategoricalStraightThrough", (SIMPLEX,), {}, np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])),
    ("ContinuousBernoulli", (Q3,), {}, Q3),
    ("ContinuousBernoulli", (np.array([0.4995, 0.3, 0.5]),), {}, Q3),
]

PROBS = np.array([0.1, 0.5, 0.8])
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


def _pair(name, args, kwargs):
    return (getattr(TD, name)(*_lib(torch, args), **_lib(torch, kwargs)),
            getattr(ED, name)(*_lib(ember, args), **_lib(ember, kwargs)))


def _close(a, b, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_deterministic_quantities(case):
    name, args, kwargs, value = case
    td, ed = _pair(name, args, kwargs)
    single = any(getattr(a, "dtype", None) == np.float32 for a in args)
    assert tuple(ed.batch_shape) == tuple(td.batch_shape)
    assert tuple(ed.event_shape) == tuple(td.event_shape)
    assert repr(td.support).replace("torch.", "") == repr(ed.support).replace("ember.", "") \
        or name in ("Uniform", "Binomial", "Pareto")
    checked = 0
    for prop in ("mean", "mode", "variance", "stddev"):
        if (name, prop) == ("Kumaraswamy", "mode"):
            continue  # PyTorch 2.13 returns NaN for every mode (see test_kumaraswamy_mode)
        try:
            expected = getattr(td, prop)
        except NotImplementedError:
            continue
        _close(expected, getattr(ed, prop), rtol=2e-6 if single else 1e-6)
        checked += 1
    for method, arg in (("log_prob", value), ("cdf", value), ("icdf", PROBS), ("entropy", None)):
        try:
            expected = getattr(td, method)() if arg is None else getattr(td, method)(torch.tensor(arg))
        except NotImplementedError:
            continue
        got = getattr(ed, method)() if arg is None else getattr(ed, method)(ember.tensor(arg))
        _close(expected, got, rtol=1e-5 if method == "cdf" or single else 1e-6, atol=1e-6 if single else 1e-8)
        checked += 1
    if td.has_enumerate_support:
        for expand in (True, False):
            try:
                expected = td.enumerate_support(expand)
            except NotImplementedError:
                with pytest.raises(NotImplementedError):
                    ed.enumerate_support(expand)
                continue
            _close(expected, ed.enumerate_support(expand))
    assert checked >= 1
    for shape in ((), (4,), (2, 3)):
        assert tuple(ed.sample(shape).shape) == tuple(td.sample(shape).shape)
    big = tuple(td.batch_shape) and (5,) + tuple(td.batch_shape)
    if big:
        assert tuple(ed.expand(big).sample().shape) == tuple(td.expand(big).sample().shape)


KL_PAIRS = [
    ("Normal", (P3 - 1, P3), (P3, P3 + 1)),
    ("LogNormal", (P3 - 1, P3), (P3, P3 + 1)),
    ("HalfNormal", (P3,), (P3 + 1,)),
    ("Bernoulli", (Q3,), (Q3[::-1].copy(),)),
    ("Bernoulli", (np.array([0.0, 1.0, 0.5]),), (np.array([0.0, 0.0, 1.0]),)),
    ("Binomial", (5.0, Q3), (5.0, Q3[::-1].copy())),
    ("Geometric", (Q3,), (Q3[::-1].copy(),)),
    ("Categorical", (SIMPLEX,), (SIMPLEX[::-1].copy(),)),
    ("Categorical", (np.array([0.0, 1.0]),), (np.array([0.5, 0.5]),)),
    ("Categorical", (np.array([0.5, 0.5]),), (np.array([0.0, 1.0]),)),
    ("OneHotCategorical", (SIMPLEX,), (SIMPLEX[::-1].copy(),)),
    ("Poisson", (P3,), (P3[::-1].copy(),)),
    ("Exponential", (P3,), (P3[::-1].copy(),)),
    ("Laplace", (P3 - 1, P3), (P3, P3 + 1)),
    ("Cauchy", (P3 - 1, P3), (P3, P3 + 1)),
    ("Gumbel", (P3 - 1, P3), (P3, P3 + 1)),
    ("Uniform", (P3 - 1, P3 + 1), (P3 - 2, P3 + 1.5)),
    ("Uniform", (P3 - 1, P3 + 1), (P3 - 0.5, P3 + 1.5)),
    ("Gamma", (P3, P3 + 0.5), (P3 + 1, P3)),
    ("Beta", (P3, P3 + 0.3), (P3 + 1, P3)),
    ("Dirichlet", (SIMPLEX * 4,), (SIMPLEX[::-1] * 3,)),
    ("MultivariateNormal", (np.zeros(3), COV), (np.ones((2, 3)), COV + np.eye(3))),
    ("ContinuousBernoulli", (Q3,), (Q3[::-1].copy(),)),
    ("Wishart", (np.array([4.0, 6.0]), COV), (np.array([5.0, 3.5]), COV + np.eye(3))),
]


@pytest.mark.parametrize("case", KL_PAIRS, ids=[f"{c[0]}-{i}" for i, c in enumerate(KL_PAIRS)])
def test_kl_divergence(case):
    name, pa, qa = case
    tp, ep = _pair(name, pa, {})
    tq, eq = _pair(name, qa, {})
    _close(TD.kl_divergence(tp, tq), ED.kl_divergence(ep, eq))


def test_kl_independent_and_lowrank():
    loc, w, d = np.zeros((2, 3)), np.array([[1.0], [0.5], [-0.3]]), P3
    tp, ep = _pair("LowRankMultivariateNormal", (loc, w, d), {})
    tq, eq = _pair("MultivariateNormal", (np.ones(3),), {"covariance_matrix": COV})
    _close(TD.kl_divergence(tp, tq), ED.kl_divergence(ep, eq))
    _close(TD.kl_divergence(tq, tp), ED.kl_divergence(eq, ep))
    ti = TD.Independent(TD.Normal(torch.tensor(SIMPLEX), 1.0), 1)
    tj = TD.Independent(TD.Normal(torch.tensor(SIMPLEX[::-1].copy()), 2.0), 1)
    ei = ED.Independent(ED.Normal(ember.tensor(SIMPLEX), 1.0), 1)
    ej = ED.Independent(ED.Normal(ember.tensor(SIMPLEX[::-1].copy()), 2.0), 1)
    _close(TD.kl_divergence(ti, tj), ED.kl_divergence(ei, ej))


def _constraints(lib):
    c = lib.distributions.constraints
    return [c.real, c.positive, c.greater_than(2.0), c.greater_than_eq(1.0), c.less_than(3.0), c.unit_interval,
            c.interval(-1.0, 2.0), c.half_open_interval(0.0, 3.0), c.simplex, c.real_vector,
            c.independent(c.positive, 1), c.nonnegative]


@pytest.mark.parametrize("index", range(12))
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_biject_to_transform_to(registry, index):
    x = np.array([[-0.7, 0.2, 1.5], [0.3, -2.0, 0.9]])
    tt = getattr(TD, registry)(_constraints(torch)[index])
    et = getattr(ED, registry)(_constraints(ember)[index])
    ty, ey = tt(torch.tensor(x)), et(ember.tensor(x))
    _close(ty, ey)
    _close(tt.inv(ty), et.inv(ey))
    assert bool(_constraints(ember)[index].check(ey).all())
    if tt.bijective:
        _close(tt.log_abs_det_jacobian(torch.tensor(x), ty), et.log_abs_det_jacobian(ember.tensor(x), ey))


TRANSFORMS = ["ExpTransform()", "SigmoidTransform()", "TanhTransform()", "SoftplusTransform()",
              "StickBreakingTransform()", "AffineTransform(0.5, -2.0)", "PowerTransform(T.tensor(2.5))",
              "ComposeTransform([ExpTransform(), AffineTransform(1.0, 3.0)])",
              "IndependentTransform(SigmoidTransform(), 1)", "ReshapeTransform((3,), (3, 1))",
              "CatTransform([ExpTransform(), AffineTransform(0.0, 3.0)], 1, [1, 2])",
              "StackTransform([ExpTransform(), TanhTransform(), SigmoidTransform()], 1)"]


@pytest.mark.parametrize("expr", TRANSFORMS)
def test_transforms_forward_inverse_jacobian(expr):
    x = np.array([[0.7, 0.2, 1.5], [0.3, 2.0, 0.9]])
    made = []
    for lib in (torch, ember):
        scope = {n: getattr(lib.distributions.transforms, n) for n in dir(lib.distributions.transforms)
                 if n.endswith("Transform")}
        scope["T"] = lib
        made.append(eval(expr, scope))
    tt, et = made
    ty, ey = tt(torch.tensor(x)), et(ember.tensor(x))
    _close(ty, ey)
    _close(tt.inv(ty), et.inv(ey))
    _close(tt.log_abs_det_jacobian(torch.tensor(x), ty), et.log_abs_det_jacobian(ember.tensor(x), ey))
    assert repr(tt.domain) == repr(et.domain) and repr(tt.codomain) == repr(et.codomain)
    assert tuple(tt.forward_shape((2, 3))) == tuple(et.forward_shape((2, 3)))


def test_kumaraswamy_mode():
    """PyTorch 2.13 answers NaN for every Kumaraswamy mode; ember gives ((a-1)/(ab-1))^(1/a)
    (the density's maximum) for a, b >= 1, and NaN elsewhere."""
    a, b = np.array([2.0, 3.0, 0.5]), np.array([3.0, 2.0, 0.5])
    assert np.isnan(TD.Kumaraswamy(torch.tensor(a), torch.tensor(b)).mode.numpy()).all()
    got = ED.Kumaraswamy(ember.tensor(a), ember.tensor(b)).mode.numpy()
    np.testing.assert_allclose(got[:2], (((a - 1) / (a * b - 1)) ** (1 / a))[:2])
    assert np.isnan(got[2])


CROSS = [
    ("Beta", (P3, P3 + 0.3)), ("Exponential", (P3,)), ("Gamma", (P3 + 0.5, P3)), ("Normal", (P3 - 1, P3)),
    ("Gumbel", (P3 - 1, P3)), ("Laplace", (P3 - 1, P3)), ("Uniform", (P3 * 0.1, P3 * 0.2 + 0.3)),
    ("Uniform", (P3 - 1.5, P3)), ("Pareto", (P3, P3 + 1.5)), ("Pareto", (P3, P3 * 0.5)),
    ("Bernoulli", (Q3,)), ("Poisson", (P3,)), ("Binomial", (5.0, Q3)), ("ContinuousBernoulli", (Q3,)),
    ("ContinuousBernoulli", (np.array([0.4995, 0.7, 0.1]),)), ("Uniform", (Q3 * 0.1, Q3 * 0.5 + 0.5)),
]


@pytest.mark.parametrize("i", range(len(CROSS)))
@pytest.mark.parametrize("j", range(len(CROSS)))
def test_kl_across_families(i, j):
    (pn, pa), (qn, qa) = CROSS[i], CROSS[j]
    if pn == qn:
        return
    tp, ep = _pair(pn, pa, {})
    tq, eq = _pair(qn, qa, {})
    try:
        expected = TD.kl_divergence(tp, tq)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ED.kl_divergence(ep, eq)
        return
    _close(expected, ED.kl_divergence(ep, eq), rtol=1e-5, atol=1e-7)


def test_corr_cholesky_transform_and_lkj():
    x = np.array([[0.3, -1.2, 0.7, 0.1, 2.0, -0.4], [0.0, 0.5, -0.5, 1.0, -1.0, 0.2]])
    tt, et = TD.transforms.CorrCholeskyTransform(), ED.transforms.CorrCholeskyTransform()
    ty, ey = tt(torch.tensor(x)), et(ember.tensor(x))
    _close(ty, ey)
    _close(tt.inv(ty), et.inv(ey))
    _close(tt.log_abs_det_jacobian(torch.tensor(x), ty), et.log_abs_det_jacobian(ember.tensor(x), ey))
    assert tuple(et.forward_shape((2, 6))) == (2, 4, 4) and tuple(et.inverse_shape((2, 4, 4))) == (2, 6)
    for registry in ("biject_to", "transform_to"):
        _close(getattr(TD, registry)(TD.constraints.corr_cholesky)(torch.tensor(x)),
               getattr(ED, registry)(ED.constraints.corr_cholesky)(ember.tensor(x)))
    conc = np.array([0.5, 1.0, 2.5])
    for dim in (2, 4):
        td = TD.LKJCholesky(dim, torch.tensor(conc))
        ed = ED.LKJCholesky(dim, ember.tensor(conc))
        value = tt(torch.tensor(x[:, :dim * (dim - 1) // 2]))[:, None]
        _close(td.log_prob(value), ed.log_prob(ember.tensor(value.numpy())))
        assert tuple(ed.sample((5,)).shape) == tuple(td.sample((5,)).shape)
        assert tuple(ed.expand((2, 3)).batch_shape) == (2, 3)
