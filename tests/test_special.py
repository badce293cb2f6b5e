"""ember.special and the gamma family at the top level: the namespace, the methods, the edge values
and errors PyTorch 2.13 gives (values written down from PyTorch; the value tables against
references are in the conformance suite, optable_special.py, and the differential tests in
tests/torch_oracle)."""
import math

import pytest

import ember
from ember import special as S

inf, nan = math.inf, math.nan


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g != g and w != w) or g == w or abs(g - w) <= 1e-12 * abs(w), (got, want)


def test_the_namespace_has_pytorchs_names():
    for name in ("gammaln", "psi", "digamma", "polygamma", "multigammaln", "zeta", "ndtr", "ndtri", "log_ndtr",
                 "erfcx", "entr", "xlog1py", "xlogy", "i0", "i0e", "i1", "i1e", "expit", "logit", "sinc", "round",
                 "softmax", "log_softmax", "logsumexp", "bessel_j0", "bessel_y1", "modified_bessel_k0",
                 "scaled_modified_bessel_k1", "spherical_bessel_j0", "legendre_polynomial_p"):
        assert callable(getattr(S, name)), name
    assert S.gammaln is ember.lgamma and S.psi is ember.digamma and S.expit is ember.sigmoid
    assert S.zeta.__name__ == "special_zeta" and S.ndtr.__name__ == "special_ndtr"
    with pytest.raises(AttributeError, match="not built yet"):
        S.airy_ai  # noqa: B018


def test_lgamma_and_digamma_edge_values():
    x = ember.tensor([-inf, -2.0, -1.5, -0.0, 0.0, 1.0, 2.0, inf, nan], dtype=ember.float64)
    _same(ember.lgamma(x).tolist(), [inf, inf, 0.860047015376481, inf, inf, 0.0, 0.0, inf, nan])
    _same(ember.digamma(x).tolist(), [nan, nan, 0.7031566406452433, inf, -inf, -0.5772156649015329,
                                      0.42278433509846713, inf, nan])


def test_polygamma_forms_and_errors():
    x = ember.tensor([0.5, 1.0, 3.0], dtype=ember.float64)
    _same(ember.polygamma(1, x).tolist(), [math.pi ** 2 / 2, math.pi ** 2 / 6, math.pi ** 2 / 6 - 1.25])
    _same(x.polygamma(1).tolist(), ember.polygamma(1, x).tolist())
    assert ember.polygamma(0, x).tolist() == ember.digamma(x).tolist()
    y = x.clone()
    assert y.polygamma_(2) is y and y.tolist() == ember.polygamma(2, x).tolist()
    with pytest.raises(RuntimeError, match="negative n"):
        ember.polygamma(-1, x)
    assert ember.lgamma(ember.tensor([1, 2])).dtype == ember.float32


def test_mvlgamma():
    got = ember.mvlgamma(ember.tensor([2.0, 3.0], dtype=ember.float64), p=2).tolist()
    _same(got, [math.lgamma(2) + math.lgamma(1.5) + 0.5 * math.log(math.pi),
                math.lgamma(3) + math.lgamma(2.5) + 0.5 * math.log(math.pi)])
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        ember.mvlgamma(ember.tensor([2.0]), p=0)


def test_zeta_conventions_and_gradient():
    s = ember.tensor([1.0, 0.5, 2.0, 2.0, 3.0, 2.0, inf], dtype=ember.float64)
    q = ember.tensor([1.0, 1.0, -1.0, -1.5, -1.5, 0.0, 2.0], dtype=ember.float64)
    got = S.zeta(s, q).tolist()
    _same(got[:3], [inf, nan, inf])
    assert abs(got[3] - 9.379246644989124) < 1e-12 and abs(got[4] - 0.11810202151536942) < 1e-7
    _same(got[5:], [inf, nan])
    qq = ember.tensor([1.5, 2.0], dtype=ember.float64, requires_grad=True)
    S.zeta(3.0, qq).sum().backward()
    _same(qq.grad.tolist(), (-3 * S.zeta(4.0, qq.detach())).tolist())
    ss = ember.tensor([3.0], dtype=ember.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for 'zeta' is not implemented"):
        S.zeta(ss, 2.0).sum().backward()


def test_normal_distribution_functions():
    _same(S.ndtri(ember.tensor([-0.1, 0.0, 1.0, 1.1, nan, 0.5], dtype=ember.float64)).tolist(),
          [nan, -inf, inf, nan, nan, 0.0])
    assert abs(S.ndtri(ember.tensor([0.975], dtype=ember.float64)).item() - 1.959963984540054) < 1e-14
    left = S.log_ndtr(ember.tensor([-40.0], dtype=ember.float64)).item()
    assert abs(left - -804.6084420137538) < 1e-10  # no underflow to -inf
    _same(S.erfcx(ember.tensor([-inf, 0.0, inf], dtype=ember.float64)).tolist(), [inf, 1.0, 0.0])


def test_bessel_edge_values():
    x = ember.tensor([-inf, -2.0, -0.0, 0.0, inf, nan], dtype=ember.float64)
    _same(ember.i0(x).tolist(), [nan, 2.279585302336067, 1.0, 1.0, nan, nan])
    _same(S.i0e(x).tolist(), [0.0, 0.308508322553671, 1.0, 1.0, 0.0, nan])
    _same(S.bessel_j0(x).tolist(), [nan, 0.22389077914123567, 1.0, 1.0, nan, nan])
    _same(S.bessel_y0(x).tolist(), [nan, nan, -inf, -inf, nan, nan])
    _same(S.modified_bessel_k1(x).tolist(), [nan, nan, inf, inf, 0.0, nan])
    with pytest.raises(NotImplementedError, match="bessel_j0_cpu"):
        S.bessel_j0(ember.tensor([1.0], dtype=ember.float16))


def test_non_differentiable_functions_give_results_without_grad():
    x = ember.tensor([0.3, 1.5], requires_grad=True)
    for fn in (S.bessel_j0, S.modified_bessel_i0, S.spherical_bessel_j0, lambda t: S.hermite_polynomial_h(t, 3)):
        assert not fn(x).requires_grad
    assert S.i1(x).requires_grad


def test_polynomials():
    x = ember.tensor([0.5, 1.0, -1.0, 2.0])
    n = ember.tensor([3.7, -1.0, 5.0, 2.0])
    assert S.chebyshev_polynomial_t(x, n).tolist() == [-1.0, 0.0, -1.0, 7.0]
    assert S.hermite_polynomial_h(x, n).tolist() == [-5.0, 0.0, 8.0, 14.0]
    assert S.legendre_polynomial_p(x, n).tolist() == [-0.4375, 0.0, -1.0, 5.5]
    assert S.chebyshev_polynomial_t(2.0, ember.tensor([3])).tolist() == [26.0]
    with pytest.raises(NotImplementedError, match="chebyshev_polynomial_t_cpu"):
        S.chebyshev_polynomial_t(ember.tensor([0.5], dtype=ember.float16), 3)
