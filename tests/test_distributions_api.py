"""ember.distributions' API as PyTorch documents it: batch/event/sample shapes, expand,
validate_args and its errors, constraints, transforms (inverses and log-Jacobians against
numerical derivatives), biject_to/transform_to, kl_divergence (closed forms and the registry)."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import ember
from ember import distributions as D
from ember.distributions import constraints as C
from ember.distributions import transforms as TR

T = ember.tensor


def _f(x):
    return np.asarray(x.detach().numpy(), dtype=np.float64)


SHAPED = [
    (lambda: D.Normal(ember.zeros(3, 2), 1.0), (3, 2), ()),
    (lambda: D.Gamma(ember.ones(2), ember.ones(3, 1)), (3, 2), ()),
    (lambda: D.Dirichlet(ember.ones(4, 3)), (4,), (3,)),
    (lambda: D.Categorical(logits=ember.zeros(4, 5)), (4,), ()),
    (lambda: D.OneHotCategorical(probs=ember.ones(4, 5)), (4,), (5,)),
    (lambda: D.Multinomial(3, probs=ember.ones(2, 5)), (2,), (5,)),
    (lambda: D.MultivariateNormal(ember.zeros(2, 3), ember.eye(3)), (2,), (3,)),
    (lambda: D.LowRankMultivariateNormal(ember.zeros(3), ember.ones(2, 3, 1), ember.ones(3)), (2,), (3,)),
    (lambda: D.Independent(D.Normal(ember.zeros(4, 3), 1.0), 1), (4,), (3,)),
    (lambda: D.LogisticNormal(ember.zeros(4, 3), ember.ones(4, 3)), (4,), (4,)),
    (lambda: D.MixtureSameFamily(D.Categorical(ember.ones(2, 3)), D.Normal(ember.zeros(2, 3), 1.0)), (2,), ()),
    (lambda: D.RelaxedOneHotCategorical(T(0.5), logits=ember.zeros(2, 3)), (2,), (3,)),
    (lambda: D.Binomial(ember.full((2,), 4.0), probs=T(0.5)), (2,), ()),
    (lambda: D.VonMises(ember.zeros(2), T(1.0)), (2,), ()),
]


@pytest.mark.parametrize("make,batch,event", SHAPED, ids=[f"s{i}" for i in range(len(SHAPED))])
def test_shapes_sample_and_expand(make, batch, event):
    d = make()
    assert tuple(d.batch_shape) == batch and tuple(d.event_shape) == event
    assert isinstance(d.batch_shape, ember.Size)
    assert tuple(d.sample().shape) == batch + event
    assert tuple(d.sample((5, 2)).shape) == (5, 2) + batch + event
    assert tuple(d.sample(ember.Size([7])).shape) == (7,) + batch + event
    e = d.expand((6,) + batch)
    assert type(e) is type(d) and tuple(e.batch_shape) == (6,) + batch
    assert tuple(e.sample((2,)).shape) == (2, 6) + batch + event
    x = d.sample((3,))
    assert tuple(d.log_prob(x).shape) == (3,) + batch
    np.testing.assert_allclose(_f(e.log_prob(x.unsqueeze(1))), np.broadcast_to(_f(d.log_prob(x)).reshape(
        (3, 1) + batch), (3, 6) + batch), rtol=1e-5)


def test_scalar_parameters_and_perplexity():
    d = D.Normal(0.0, 2.0)
    assert d.batch_shape == ember.Size([]) and d.loc.dtype == ember.get_default_dtype()
    assert float(d.perplexity()) == pytest.approx(math.exp(float(d.entropy())))
    assert repr(d) == "Normal(loc: 0.0, scale: 2.0)"
    assert repr(D.Normal(ember.zeros(2), 1.0)) == "Normal(loc: ember.Size([2]), scale: ember.Size([2]))"
    assert repr(D.Categorical(logits=ember.zeros(3))) == "Categorical(logits: ember.Size([3]))"


def test_validate_args_errors():
    with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape \(2,\)\) of distribution "
                                         r"Normal\(loc: ember.Size\(\[2\]\), scale: ember.Size\(\[2\]\)\) to satisfy "
                                         r"the constraint GreaterThan\(lower_bound=0.0\), but found invalid values"):
        D.Normal(ember.zeros(2), T([1.0, -1.0]))
    D.Normal(ember.zeros(2), T([1.0, -1.0]), validate_args=False)  # no check
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        D.Bernoulli(probs=0.3, logits=0.1)
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified"):
        D.Categorical()
    e = D.Exponential(T([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"Expected value argument \(Tensor of shape \(2,\)\) to be within the "
                                         r"support \(GreaterThanEq\(lower_bound=0.0\)\)"):
        e.log_prob(T([-1.0, 2.0]))
    with pytest.raises(ValueError, match=r"Value is not broadcastable with batch_shape\+event_shape"):
        e.log_prob(T([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        e.log_prob([1.0, 2.0])
    with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
        D.Dirichlet(ember.ones(3)).log_prob(ember.ones(2) / 2)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        D.MultivariateNormal(ember.zeros(2))
    with pytest.raises(ValueError, match="PositiveDefinite"):
        D.MultivariateNormal(ember.zeros(2), T([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="LessThan"):
        D.Uniform(1.0, 0.0)
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims <= len"):
        D.Independent(D.Normal(ember.zeros(2), 1.0), 2)
    with pytest.raises(ValueError, match="does not equal `component_distribution.batch_shape"):
        D.MixtureSameFamily(D.Categorical(ember.ones(3)), D.Normal(ember.zeros(2), 1.0))
    with pytest.raises(ValueError, match="transforms must be a Transform or a list of Transforms"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), [3])
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count"):
        D.Multinomial(T(3.0), ember.ones(2))
    with pytest.raises(RuntimeError):
        D.Normal(ember.zeros(2), 1.0).expand((3, 1))
    # the default can be switched off for later distributions
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(0.0, -1.0)
    finally:
        D.Distribution.set_default_validate_args(True)


def test_enumerate_support():
    b = D.Bernoulli(ember.full((2, 3), 0.3))
    assert tuple(b.enumerate_support().shape) == (2, 2, 3)
    assert tuple(b.enumerate_support(expand=False).shape) == (2, 1, 1)
    c = D.Categorical(ember.ones(4, 3))
    np.testing.assert_array_equal(_f(c.enumerate_support(expand=False)).ravel(), [0, 1, 2])
    np.testing.assert_array_equal(_f(D.OneHotCategorical(ember.ones(3)).enumerate_support()), np.eye(3))
    np.testing.assert_array_equal(_f(D.Binomial(4, ember.full((2,), 0.5)).enumerate_support())[:, 0], range(5))
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
        D.Binomial(T([3.0, 4.0]), T(0.5)).enumerate_support()
    with pytest.raises(NotImplementedError, match="cartesian product"):
        D.Independent(D.Bernoulli(ember.full((2, 3), 0.5)), 1).enumerate_support()
    assert D.Bernoulli.has_enumerate_support and not D.Normal.has_enumerate_support


def test_probs_logits_twins():
    b = D.Bernoulli(logits=T([0.0, 2.0]))
    np.testing.assert_allclose(_f(b.probs), 1 / (1 + np.exp(-np.array([0.0, 2.0]))), rtol=1e-6)
    c = D.Categorical(probs=T([1.0, 3.0]))  # normalised
    np.testing.assert_allclose(_f(c.probs), [0.25, 0.75])
    np.testing.assert_allclose(_f(c.logits), np.log([0.25, 0.75]), rtol=1e-6)
    g = D.Geometric(logits=T([0.0]))
    assert float(g.probs) == pytest.approx(0.5)


# ---- constraints ---------------------------------------------------------------------------------

def test_constraints_check_and_repr():
    assert repr(C.positive) == "GreaterThan(lower_bound=0.0)"
    assert repr(C.real_vector) == "IndependentConstraint(Real(), 1)"
    assert repr(C.integer_interval(0, 3)) == "IntegerInterval(lower_bound=0, upper_bound=3)"
    assert repr(C.unit_interval) == "Interval(lower_bound=0.0, upper_bound=1.0)"
    assert C.one_hot.is_discrete and C.one_hot.event_dim == 1 and C.lower_cholesky.event_dim == 2
    assert _f(C.positive.check(T([[1.0, -1.0]]))).tolist() == [[1.0, 0.0]]
    assert _f(C.simplex.check(T([[0.5, 0.5], [0.2, 0.2]]))).tolist() == [1.0, 0.0]
    assert _f(C.real.check(T([float("nan"), float("inf")]))).tolist() == [0.0, 1.0]
    assert _f(C.integer_interval(0, 3).check(T([0.0, 1.5, 3.0]))).tolist() == [1.0, 0.0, 1.0]
    assert _f(C.half_open_interval(0, 1).check(T([0.0, 1.0]))).tolist() == [1.0, 0.0]
    assert bool(C.positive_definite.check(ember.eye(2))) and not bool(C.positive_definite.check(-ember.eye(2)))
    assert bool(C.lower_cholesky.check(ember.eye(2)))
    assert _f(C.independent(C.positive, 1).check(T([[1.0, 2.0], [1.0, -1.0]]))).tolist() == [1.0, 0.0]
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        C.dependent.check(ember.ones(1))
    with pytest.raises(NotImplementedError):
        C.dependent.is_discrete  # noqa: B018
    cat = C.cat([C.real, C.positive], 0, [1, 2])
    assert _f(cat.check(T([-1.0, 2.0, -3.0]))).tolist() == [1.0, 1.0, 0.0]
    st = C.stack([C.real, C.positive], 0)
    assert _f(st.check(T([[-1.0, 2.0], [2.0, -3.0]]))).tolist() == [[1.0, 1.0], [1.0, 0.0]]


# ---- transforms ----------------------------------------------------------------------------------

ELEMENTWISE = [TR.ExpTransform(), TR.SigmoidTransform(), TR.TanhTransform(), TR.SoftplusTransform(),
               TR.AffineTransform(0.5, -2.0), TR.PowerTransform(T(2.5, dtype=ember.float64)),
               TR.ComposeTransform([TR.ExpTransform(), TR.AffineTransform(1.0, 3.0)])]


@pytest.mark.parametrize("t", ELEMENTWISE, ids=lambda t: type(t).__name__)
def test_elementwise_transform_inverse_and_jacobian(t):
    x = T([0.3, 0.9, 1.7], dtype=ember.float64)
    y = t(x)
    np.testing.assert_allclose(_f(t.inv(y)), _f(x), rtol=1e-10)
    h = 1e-6
    slope = (_f(t(x + h)) - _f(t(x - h))) / (2 * h)
    np.testing.assert_allclose(_f(t.log_abs_det_jacobian(x, y)), np.log(np.abs(slope)), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_f(t.inv.log_abs_det_jacobian(y, x)), -np.log(np.abs(slope)), rtol=1e-6, atol=1e-8)
    assert t.inv.inv is t and t.bijective


def test_stick_breaking_jacobian_is_the_determinant():
    t = TR.StickBreakingTransform()
    x = T([0.3, -0.9, 1.7], dtype=ember.float64)
    y = t(x)
    assert abs(float(y.sum()) - 1) < 1e-12 and bool(C.simplex.check(y))
    np.testing.assert_allclose(_f(t.inv(y)), _f(x), rtol=1e-10)
    jac = ember.autograd.functional.jacobian(lambda v: t(v)[:-1], x)
    assert float(t.log_abs_det_jacobian(x, y)) == pytest.approx(math.log(abs(np.linalg.det(_f(jac)))), rel=1e-10)
    np.testing.assert_allclose(_f(TR.StickBreakingTransform()(ember.zeros(3))), [0.25] * 4)


def test_transform_caching_structure_and_pickle():
    e = TR.ExpTransform(cache_size=1)
    x = T([0.5])
    assert e.inv(e(x)) is x
    assert TR.ExpTransform() == TR.ExpTransform() and TR.AffineTransform(0.0, 2.0) == TR.AffineTransform(0.0, 2.0)
    assert TR.AffineTransform(0.0, 2.0) != TR.AffineTransform(0.0, 3.0)
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        TR.ExpTransform(cache_size=2)
    c = TR.ComposeTransform([TR.ExpTransform(), TR.AffineTransform(0.0, -1.0)])
    assert c.sign == -1 and TR.identity_transform(x) is x
    r = TR.ReshapeTransform((2, 3), (6,))
    assert tuple(r(ember.ones(4, 2, 3)).shape) == (4, 6) and tuple(r.forward_shape((4, 2, 3))) == (4, 6)
    with pytest.raises(ValueError, match="in_shape, out_shape have different numbers of elements"):
        TR.ReshapeTransform((2, 3), (5,))
    i = TR.IndependentTransform(TR.ExpTransform(), 1)
    xx = T([[0.1, 0.2], [0.3, 0.4]])
    np.testing.assert_allclose(_f(i.log_abs_det_jacobian(xx, i(xx))), [0.3, 0.7], rtol=1e-6)
    lc = TR.LowerCholeskyTransform()
    m = T([[0.3, 5.0], [-1.0, 0.2]])
    assert bool(C.lower_cholesky.check(lc(m))) and np.allclose(_f(lc.inv(lc(m))), _f(m.tril()))
    assert bool(C.positive_definite.check(TR.PositiveDefiniteTransform()(m)))
    sm = TR.SoftmaxTransform()
    assert not sm.bijective and np.allclose(_f(sm(T([0.0, math.log(3.0)]))), [0.25, 0.75])
    back = pickle.loads(pickle.dumps(c))
    assert np.allclose(_f(back(x)), _f(c(x)))


@pytest.mark.parametrize("constraint", [C.real, C.positive, C.greater_than(2.0), C.less_than(-1.0),
                                        C.unit_interval, C.interval(-1.0, 3.0), C.simplex, C.real_vector,
                                        C.independent(C.positive, 1), C.cat([C.real, C.positive], 0, [1, 2]),
                                        C.stack([C.positive, C.unit_interval], 0)], ids=repr)
def test_biject_to_and_transform_to_land_in_the_constraint(constraint):
    x = T([-2.0, 0.3, 1.5])
    for registry in (D.biject_to, D.transform_to):
        t = registry(constraint)
        z = x if not isinstance(constraint, C._Stack) else x[:2]
        y = t(z)
        assert bool(constraint.check(y).all()), (registry, y)
        if t.bijective:
            np.testing.assert_allclose(_f(t.inv(y)), _f(z), rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        D.biject_to(C.boolean)


def test_transformed_distribution_matches_change_of_variables():
    base = D.Normal(T([0.2, -0.4], dtype=ember.float64), 0.7)
    t = TR.ComposeTransform([TR.AffineTransform(1.0, 2.0), TR.ExpTransform()])
    d = D.TransformedDistribution(base, t)
    y = T([0.5, 3.0], dtype=ember.float64)
    x = (np.log(_f(y)) - 1) / 2
    ref = _f(base.log_prob(T(x))) - np.log(2 * _f(y))
    np.testing.assert_allclose(_f(d.log_prob(y)), ref, rtol=1e-12)
    np.testing.assert_allclose(_f(d.cdf(y)), _f(base.cdf(T(x))), rtol=1e-12)
    np.testing.assert_allclose(_f(d.icdf(d.cdf(y))), _f(y), rtol=1e-10)
    assert repr(d.support) == "GreaterThan(lower_bound=0.0)" and d.has_rsample


# ---- KL ------------------------------------------------------------------------------------------

def test_kl_closed_forms():
    f64 = ember.float64
    kl = float(D.kl_divergence(D.Normal(T(0.5, dtype=f64), 1.5), D.Normal(T(-1.0, dtype=f64), 2.0)))
    assert kl == pytest.approx(math.log(2 / 1.5) + (1.5 ** 2 + 1.5 ** 2) / (2 * 4) - 0.5)
    kl = float(D.kl_divergence(D.Bernoulli(T(0.3, dtype=f64)), D.Bernoulli(T(0.6, dtype=f64))))
    assert kl == pytest.approx(0.3 * math.log(0.5) + 0.7 * math.log(0.7 / 0.4))
    kl = float(D.kl_divergence(D.Exponential(T(2.0, dtype=f64)), D.Exponential(T(0.5, dtype=f64))))
    assert kl == pytest.approx(math.log(4) + 0.25 - 1)
    kl = float(D.kl_divergence(D.Poisson(T(2.0, dtype=f64)), D.Poisson(T(3.0, dtype=f64))))
    assert kl == pytest.approx(2 * math.log(2 / 3) + 1)
    kl = float(D.kl_divergence(D.Uniform(T(0.0, dtype=f64), 1.0), D.Uniform(T(-1.0, dtype=f64), 2.0)))
    assert kl == pytest.approx(math.log(3))
    assert math.isinf(float(D.kl_divergence(D.Uniform(T(0.0), 2.0), D.Uniform(T(0.0), 1.0))))
    p, q = np.array([0.2, 0.3, 0.5]), np.array([0.4, 0.4, 0.2])
    kl = float(D.kl_divergence(D.Categorical(T(p)), D.Categorical(T(q))))
    assert kl == pytest.approx(float((p * np.log(p / q)).sum()), rel=1e-6)
    kl = float(D.kl_divergence(D.Gamma(T(2.0, dtype=f64), 1.0), D.Gamma(T(2.0, dtype=f64), 2.0)))
    assert kl == pytest.approx(2 * math.log(0.5) + 2 * (2 - 1))
    cov1, cov2 = np.array([[2.0, 0.3], [0.3, 1.0]]), np.eye(2)
    mu = np.array([0.5, -1.0])
    ref = 0.5 * (np.trace(cov1) + mu @ mu - 2 - math.log(np.linalg.det(cov1)))
    kl = float(D.kl_divergence(D.MultivariateNormal(T(mu), T(cov1)), D.MultivariateNormal(T(np.zeros(2)), T(cov2))))
    assert kl == pytest.approx(ref, rel=1e-10)


def test_kl_against_monte_carlo():
    ember.manual_seed(4)
    f64 = ember.float64
    for p, q in [(D.Beta(T(2.0, dtype=f64), 3.0), D.Beta(T(1.5, dtype=f64), 1.0)),
                 (D.Dirichlet(T([1.0, 2.0, 3.0], dtype=f64)), D.Dirichlet(T([2.0, 2.0, 2.0], dtype=f64))),
                 (D.Laplace(T(0.0, dtype=f64), 1.0), D.Laplace(T(1.0, dtype=f64), 2.0)),
                 (D.Gamma(T(3.0, dtype=f64), 2.0), D.Gamma(T(1.5, dtype=f64), 0.5))]:
        x = p.sample((40000,))
        diff = _f(p.log_prob(x) - q.log_prob(x))
        assert abs(float(D.kl_divergence(p, q)) - diff.mean()) <= 5 * diff.std() / math.sqrt(len(diff))


def test_register_kl_dispatch_and_errors():
    class MyNormal(D.Normal):
        pass

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0))) == 0.0

    @D.register_kl(MyNormal, MyNormal)
    def _mine(p, q):
        return ember.tensor(42.0)

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), MyNormal(0.0, 1.0))) == 42.0
    assert float(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0))) == 0.0
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Cauchy(0.0, 1.0), D.Normal(0.0, 1.0))
    with pytest.raises(TypeError):
        D.register_kl(1, D.Normal)
    ind = D.kl_divergence(D.Independent(D.Normal(ember.zeros(2, 3), 1.0), 1),
                          D.Independent(D.Normal(ember.ones(2, 3), 1.0), 1))
    np.testing.assert_allclose(_f(ind), [1.5, 1.5])
