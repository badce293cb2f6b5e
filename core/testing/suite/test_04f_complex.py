"""Tier 4f, complex numbers: the elementwise math, reductions, matrix products, indexing and the
parts-as-views ops on complex64/complex128 against numpy complex128 references, on contiguous
and non-contiguous inputs, and complex gradchecks (PyTorch's conjugate convention), for every
backend that declares the complex dtypes (skipped, with the reason, for the others)."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.testing.helpers import BackendCase as C
from ember.testing.helpers import make_tensor, supports

CX = (ember.complex64, ember.complex128)
S = (3, 4)
NZ = {"shape": S, "exclude_zero": True}


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def _ix(x):
    return x[ember.tensor([2, 0, 1])] if isinstance(x, ember.Tensor) else x[[2, 0, 1]]


COMPLEX_CASES = [
    C("add", lambda a, b: a + b, np.add, [S, S], dtypes=CX),
    C("sub_scalar", lambda a: a - (1 - 2j), lambda a: a - (1 - 2j), [S], dtypes=CX),
    C("mul", lambda a, b: a * b, np.multiply, [S, (4,)], dtypes=CX),
    C("div", lambda a, b: a / b, np.divide, [S, NZ], dtypes=CX),
    C("pow", lambda a, b: a ** b, np.power, [NZ, {"shape": S, "low": -1, "high": 1}], dtypes=CX),
    C("pow_scalar", lambda a: a ** 2, lambda a: a ** 2, [S], dtypes=CX),
    C("neg", lambda a: -a, np.negative, [S], dtypes=CX),
    C("exp", ember.exp, np.exp, [S], dtypes=CX),
    C("log", ember.log, np.log, [NZ], dtypes=CX),
    C("sqrt", ember.sqrt, np.sqrt, [S], dtypes=CX),
    C("sin", ember.sin, np.sin, [S], dtypes=CX),
    C("cos", ember.cos, np.cos, [S], dtypes=CX),
    C("tan", ember.tan, np.tan, [{"shape": S, "low": -1, "high": 1}], dtypes=CX),
    C("sinh", ember.sinh, np.sinh, [S], dtypes=CX),
    C("cosh", ember.cosh, np.cosh, [S], dtypes=CX),
    C("tanh", ember.tanh, np.tanh, [{"shape": S, "low": -1, "high": 1}], dtypes=CX),
    C("reciprocal", ember.reciprocal, np.reciprocal, [NZ], dtypes=CX),
    C("rsqrt", ember.rsqrt, lambda a: 1 / np.sqrt(a), [NZ], dtypes=CX),
    C("sigmoid", ember.sigmoid, _sigmoid, [{"shape": S, "low": -1, "high": 1}], dtypes=CX),
    C("abs", ember.abs, np.abs, [S], dtypes=CX),
    C("angle", ember.angle, np.angle, [S], dtypes=CX),
    C("sgn", ember.sgn, lambda a: a / np.abs(a), [NZ], dtypes=CX),
    C("conj", ember.conj, np.conj, [S], dtypes=CX),
    C("real", ember.real, np.real, [S], dtypes=CX),
    C("imag", ember.imag, np.imag, [S], dtypes=CX),
    C("view_as_real", ember.view_as_real, lambda a: np.stack([a.real, a.imag], -1), [S], dtypes=CX),
    C("eq", lambda a, b: a == b, np.equal, [S, S], dtypes=CX),
    C("isfinite", ember.isfinite, np.isfinite, [{"shape": S, "special": True}], dtypes=CX),
    C("sum", lambda a: a.sum(1), lambda a: a.sum(1), [S], dtypes=CX),
    C("mean", lambda a: a.mean(0), lambda a: a.mean(0), [S], dtypes=CX),
    C("prod", lambda a: a.prod(1), lambda a: a.prod(1), [S], dtypes=CX),
    C("cumsum", lambda a: a.cumsum(1), lambda a: a.cumsum(1), [S], dtypes=CX),
    C("var", lambda a: a.var(1), lambda a: a.var(1, ddof=1), [S], dtypes=CX),
    C("matmul", ember.matmul, np.matmul, [S, (4, 2)], dtypes=CX),
    C("bmm", ember.bmm, np.matmul, [(2, 3, 4), (2, 4, 2)], dtypes=CX),
    C("einsum", lambda a, b: ember.einsum("ij,kj->ik", a, b), lambda a, b: np.einsum("ij,kj->ik", a, b),
      [S, (2, 4)], dtypes=CX),
    C("where", lambda a, b: ember.where(a.real > 0, a, b), lambda a, b: np.where(a.real > 0, a, b), [S, S],
      dtypes=CX),
    C("cat", lambda a, b: ember.cat([a, b], 1), lambda a, b: np.concatenate([a, b], 1), [S, S], dtypes=CX),
    C("stack", lambda a, b: ember.stack([a, b]), lambda a, b: np.stack([a, b]), [S, S], dtypes=CX),
    C("index", _ix, _ix, [S], dtypes=CX),
    C("gather", lambda a: a.gather(1, ember.tensor([[1, 0]] * 3, device=a.device)), lambda a: np.take_along_axis(
        a, np.array([[1, 0]] * 3), 1), [S], dtypes=CX),
    C("flip", lambda a: a.flip(0), lambda a: a[::-1], [S], dtypes=CX),
]


def _needs_complex(device, dtype=ember.complex64):
    if not supports(device, dtype):
        pytest.skip(f"the backend does not declare {dtype.name}")


@pytest.mark.parametrize("case", COMPLEX_CASES, ids=[c.name for c in COMPLEX_CASES])
def test_complex_values(device, case):
    _needs_complex(device)
    case.run(device)


def _z(device, shape, seed):
    return make_tensor(shape, ember.complex128, device, seed=seed, requires_grad=True)


GRAD_CASES = {
    "mul": (lambda a, b: a * b, 2), "div": (lambda a, b: a / (b + 4), 2), "exp": (ember.exp, 1),
    "sqrt": (lambda a: ember.sqrt(a + 4), 1), "sin": (ember.sin, 1), "tanh": (ember.tanh, 1),
    "abs": (ember.abs, 1), "angle": (ember.angle, 1), "sgn": (ember.sgn, 1), "conj": (ember.conj, 1),
    "real_imag": (lambda a: a.real * a.imag, 1), "pow": (lambda a, b: (a + 4) ** b, 2),
    "matmul": (lambda a, b: a.reshape(2, 2) @ b.reshape(2, 2), 2), "prod": (lambda a: a.prod(), 1),
    "view_as_real": (lambda a: ember.view_as_real(a) * 2, 1),
    "view_as_complex": (lambda a: ember.view_as_complex(ember.view_as_real(a) * 2), 1),
    "var": (lambda a: a.var(), 1), "sigmoid": (ember.sigmoid, 1),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_complex_gradcheck(device, name):
    _needs_complex(device, ember.complex128)
    fn, n = GRAD_CASES[name]
    assert gradcheck(fn, tuple(_z(device, (4,), seed) for seed in range(n)))


def test_complex_parts_are_writable_views(device):
    _needs_complex(device)
    z = ember.tensor([1 + 2j, 3 - 1j, 5j], device=device)[::2]
    z.real.mul_(2)
    z.imag[1] = 7
    ember.view_as_real(z)[0, 1] = -1
    assert z.tolist() == [2 - 1j, 7j]


def test_complex_randn_parts_have_variance_one_half(device):
    _needs_complex(device)
    z = ember.randn(20000, dtype=ember.complex64, device=device, generator=ember.Generator(device).manual_seed(1))
    v = ember.view_as_real(z).var(0).tolist()
    assert all(abs(x - 0.5) < 0.03 for x in v)
