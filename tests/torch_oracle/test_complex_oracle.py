"""Complex numbers against PyTorch 2.13: promotion, creation, printing, the parts as views, and the
gradients of whole programs (PyTorch's conjugate convention), side by side in both libraries."""
from __future__ import annotations

import io

import numpy as np
import pytest
import torch

import ember

pytestmark = pytest.mark.filterwarnings("ignore")


def _np(t):
    return t.detach().numpy() if isinstance(t, ember.Tensor) else t.detach().numpy(force=True)


@pytest.mark.parametrize("case", [
    lambda L: L.ones(2, dtype=L.float64) + 1j,
    lambda L: L.ones(2, dtype=L.int64) + 1j,
    lambda L: L.ones(2, dtype=L.float64) + L.tensor(1j),
    lambda L: L.ones(2, dtype=L.complex64) + L.tensor(1.0, dtype=L.float64),
    lambda L: L.tensor(1.0, dtype=L.float64) + L.tensor(1j),
    lambda L: L.ones(2, dtype=L.complex64) * L.ones(2, dtype=L.float64),
    lambda L: L.ones(2, dtype=L.bfloat16) + 1j,
    lambda L: L.tensor([1 + 2j]),
    lambda L: L.tensor(1j),
    lambda L: L.zeros(2, dtype=L.cdouble),
    lambda L: L.full((2,), 1j),
    lambda L: L.ones(2, dtype=L.float32).mean(dtype=L.float64) * 1j,
])
def test_promotion_and_creation_dtypes(case):
    assert str(case(ember).dtype).split(".")[-1] == str(case(torch).dtype).split(".")[-1]


def test_default_complex_follows_the_default_dtype():
    for L in (torch, ember):
        L.set_default_dtype(L.float64)
        try:
            assert str(L.tensor([1j]).dtype).endswith("complex128")
            assert str((L.ones(2, dtype=L.int32) + 1j).dtype).endswith("complex128")
        finally:
            L.set_default_dtype(L.float32)


@pytest.mark.parametrize("values,dtype", [
    ([1 + 2j, 3 - 1j], "complex64"), ([1.5 + 2j, 3 - 1j], "complex128"), ([[1e10 + 2j, 3 - 1j]], "complex64"),
    ([float("nan") + 1j, 1e-5j], "complex64"), ([10 + 1j, 1 + 1j], "complex64"),
    ([1 - 10j, 1 + 1j, 100 + 1j], "complex64"),
    ([float("inf") + 1j, 1j], "complex64"), ([[1 + 1j, 2], [3, 4]], "complex64"), (1j, "complex64"),
])
def test_repr_matches(values, dtype):
    e = repr(ember.tensor(values, dtype=getattr(ember, dtype)))
    t = repr(torch.tensor(values, dtype=getattr(torch, dtype)))
    assert e.replace("ember.", "torch.") == t


def test_finfo_item_tolist_and_errors():
    assert ember.finfo(ember.complex64).eps == torch.finfo(torch.complex64).eps
    assert ember.finfo(ember.cdouble).dtype == torch.finfo(torch.cdouble).dtype == "float64"
    z = [1 + 2j, 3 - 1j]
    assert ember.tensor(z).tolist() == torch.tensor(z).tolist()
    assert ember.tensor(1 + 2j).item() == torch.tensor(1 + 2j).item()
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            float(L.tensor(1j))
        with pytest.raises(RuntimeError, match="real scalar outputs"):
            L.tensor([1j], requires_grad=True).sum().backward()
        with pytest.raises(RuntimeError, match="imag is not implemented"):
            L.ones(2).imag
    assert ember.can_cast(ember.complex64, ember.float64) == torch.can_cast(torch.complex64, torch.float64)


def test_parts_are_views_in_both():
    for L in (torch, ember):
        z = L.tensor([1 + 2j, 3 - 1j, 5j])[::2]
        z.real.mul_(2)
        z.imag[1] = 7
        L.view_as_real(z)[0, 1] = -1
        assert z.tolist() == [2 - 1j, 7j]
    e = ember.view_as_complex(ember.arange(8.0).reshape(2, 2, 2)[:, 1])
    t = torch.view_as_complex(torch.arange(8.0).reshape(2, 2, 2)[:, 1])
    np.testing.assert_array_equal(_np(e), _np(t))


def _programs():
    return {
        "mul-div": lambda z, w, x: (z * w / (w + 2)).abs().sum() + (z * x).real.sum(),
        "exp-log-sqrt": lambda z, w, x: (z.exp() + (w + 3).log() + z.sqrt()).imag.sum(),
        "trig": lambda z, w, x: L_view_sum(z.sin() * w.cos() + z.tanh() - w.sinh() + z.cosh() + z.tan()),
        "pow": lambda z, w, x: L_view_sum(z ** 2 + z ** w + 2 ** z + z.reciprocal() + z.rsqrt()),
        "matmul": lambda z, w, x: L_view_sum(z.reshape(2, 2) @ w.reshape(2, 2) @ x.reshape(2, 2).to(z.dtype)),
        "abs-angle-sgn": lambda z, w, x: (z.abs() * w.angle()).sum() + z.sgn().real.sum(),
        "conj-polar-complex": lambda z, w, x: L_view_sum(z.conj() * w + _lib(z).polar(x.abs() + 1, x)
                                                          + _lib(z).complex(x, x * 2)),
        "reductions": lambda z, w, x: L_view_sum(z.prod() + w.mean() + z.cumsum(0).sum()) + z.var() + w.std(),
        "sigmoid-mixed": lambda z, w, x: L_view_sum(z.sigmoid() * x + w * 2.5j),
        "views": lambda z, w, x: (_lib(z).view_as_real(z) * 3).sum() + _lib(z).view_as_complex(
            _lib(z).view_as_real(w) * 2).abs().sum(),
        "einsum-where": lambda z, w, x: L_view_sum(_lib(z).einsum("i,j->ij", z, w)
                                                   + _lib(z).where(x > 0, z, w).unsqueeze(0)),
    }


def _lib(t):
    return ember if isinstance(t, ember.Tensor) else torch


def L_view_sum(t):  # noqa: N802 - reads as the loss it is
    """A real loss of a complex tensor: weighted sums of the real and imaginary parts."""
    return (t.real * 0.7).sum() - (t.imag * 1.3).sum()


@pytest.mark.parametrize("name", sorted(_programs()))
def test_gradients_of_programs_match(name):
    f = _programs()[name]
    rng = np.random.default_rng(7)
    zv = rng.normal(size=4) + 1j * rng.normal(size=4)
    wv = rng.normal(size=4) + 1j * rng.normal(size=4)
    xv = rng.normal(size=4)
    grads = {}
    for L in (torch, ember):
        z = L.tensor(zv.tolist(), dtype=L.complex128, requires_grad=True)
        w = L.tensor(wv.tolist(), dtype=L.complex128, requires_grad=True)
        x = L.tensor(xv.tolist(), dtype=L.float64, requires_grad=True)
        loss = f(z, w, x)
        loss.backward()
        grads[L.__name__] = (_np(loss), [None if t.grad is None else _np(t.grad) for t in (z, w, x)])
    (le, ge), (lt, gt) = grads["ember"], grads["torch"]
    np.testing.assert_allclose(le, lt, rtol=1e-10, atol=1e-12)
    for a, b in zip(ge, gt):
        assert (a is None) == (b is None)
        if a is None:
            continue
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_save_load_across_libraries():
    z = ember.tensor([[1 + 2j, 3 - 1j]], dtype=ember.complex128).t()
    buf = io.BytesIO()
    ember.save({"z": z, "c": ember.tensor([1j])}, buf)
    buf.seek(0)
    d = torch.load(buf)
    assert d["z"].dtype == torch.complex128 and d["z"].tolist() == z.tolist()
    assert d["c"].dtype == torch.complex64
    buf = io.BytesIO()
    torch.save({"w": torch.tensor([[1j, 2]], dtype=torch.cdouble).t(), "v": torch.tensor([1 + 2j])}, buf)
    buf.seek(0)
    d = ember.load(buf)
    assert d["w"].dtype is ember.complex128 and d["w"].tolist() == [[1j], [2 + 0j]]
    assert d["v"].dtype is ember.complex64


def test_dlpack_both_ways():
    a = ember.tensor([1 + 2j, 3 - 1j])
    assert torch.from_dlpack(a).tolist() == a.tolist()
    t = torch.tensor([1 + 2j, 5j], dtype=torch.complex128)
    e = ember.from_dlpack(t)
    assert e.dtype is ember.complex128 and e.tolist() == t.tolist()
