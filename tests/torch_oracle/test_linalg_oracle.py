"""ember.linalg's eigh and svd against PyTorch 2.13, up to the sign of the vectors: eigenvalues
and singular values, reconstructions, |vectors|, and the gradients of gauge-invariant losses, on
generated well-conditioned batched inputs (the rest of ember.linalg is in the op-by-op oracle,
oracle/specs_factor.py)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ember

pytestmark = pytest.mark.filterwarnings("ignore")


@st.composite
def _matrix(draw, square=True):
    m = draw(st.integers(1, 4))
    n = m if square else draw(st.integers(1, 4))
    batch = draw(st.sampled_from(((), (2,), (2, 1))))
    seed = draw(st.integers(0, 2 ** 16))
    a = np.random.default_rng(seed).uniform(-1, 1, batch + (m, n))
    k = min(m, n)
    a[..., range(k), range(k)] += 3 * np.arange(1, k + 1)  # distinct eigen/singular values
    dt = draw(st.sampled_from(("float32", "float64")))
    return a.astype(dt)


def _both(a, grad):
    e = ember.tensor(a, requires_grad=grad)
    t = torch.tensor(a, requires_grad=grad)
    return e, t


def _close(x, y, dtype):
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-9
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


@settings(settings.get_profile("oracle"))
@given(a=_matrix(), uplo=st.sampled_from(("L", "U")))
def test_eigh(a, uplo):
    a = a + np.swapaxes(a, -1, -2)
    grad = a.dtype == np.float64
    e, t = _both(a, grad)
    (we, ve), (wt, vt) = ember.linalg.eigh(e, UPLO=uplo), torch.linalg.eigh(t, UPLO=uplo)
    _close(we.detach().numpy(), wt.detach().numpy(), a.dtype)
    _close(ve.abs().detach().numpy(), vt.abs().detach().numpy(), a.dtype)
    rec = (ve * we.unsqueeze(-2)) @ ve.mT
    _close(rec.detach().numpy(), ((vt * wt.unsqueeze(-2)) @ vt.mT).detach().numpy(), a.dtype)
    if grad:  # a loss invariant under the eigenvectors' signs
        w = np.random.default_rng(0).standard_normal(a.shape)
        ((ve * ve * ember.tensor(w)).sum() + we.sum()).backward()
        ((vt * vt * torch.tensor(w)).sum() + wt.sum()).backward()
        _close(e.grad.numpy(), t.grad.numpy(), a.dtype)


@settings(settings.get_profile("oracle"))
@given(a=_matrix(square=False), full=st.booleans())
def test_svd(a, full):
    grad = a.dtype == np.float64 and not full
    e, t = _both(a, grad)
    (ue, se, vhe), (ut, st_, vht) = ember.linalg.svd(e, full_matrices=full), torch.linalg.svd(t, full_matrices=full)
    assert ue.shape == ut.shape and vhe.shape == vht.shape
    _close(se.detach().numpy(), st_.detach().numpy(), a.dtype)
    k = se.shape[-1]
    _close(ue[..., :k].abs().detach().numpy(), ut[..., :k].abs().detach().numpy(), a.dtype)
    _close(vhe[..., :k, :].abs().detach().numpy(), vht[..., :k, :].abs().detach().numpy(), a.dtype)
    if grad:  # |U|^2 and |V|^2 weighted: invariant under the joint sign of each pair of vectors
        rng = np.random.default_rng(1)
        wu, wv = rng.standard_normal(ue.shape), rng.standard_normal(vhe.shape)
        ((ue * ue * ember.tensor(wu)).sum() + (vhe * vhe * ember.tensor(wv)).sum() + se.sum()).backward()
        ((ut * ut * torch.tensor(wu)).sum() + (vht * vht * torch.tensor(wv)).sum() + st_.sum()).backward()
        _close(e.grad.numpy(), t.grad.numpy(), a.dtype)


@settings(settings.get_profile("oracle"))
@given(a=_matrix(square=False), some=st.booleans(), compute_uv=st.booleans())
def test_torch_svd(a, some, compute_uv):
    (ue, se, ve), (ut, st_, vt) = ember.svd(ember.tensor(a), some, compute_uv), torch.svd(torch.tensor(a), some,
                                                                                         compute_uv)
    assert ue.shape == ut.shape and ve.shape == vt.shape
    _close(se.numpy(), st_.numpy(), a.dtype)
    _close(ue.abs().numpy(), ut.abs().numpy(), a.dtype)
    _close(ve.abs().numpy(), vt.abs().numpy(), a.dtype)


@st.composite
def _general(draw, dtypes=("float32", "float64", "complex64", "complex128")):
    """A batch of general square matrices (distinct eigenvalues, with probability one), real or
    complex."""
    n = draw(st.integers(1, 4))
    batch = draw(st.sampled_from(((), (2,), (2, 1))))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    dt = draw(st.sampled_from(dtypes))
    a = rng.uniform(-1, 1, batch + (n, n))
    if dt.startswith("complex"):
        a = a + 1j * rng.uniform(-1, 1, batch + (n, n))
    return a.astype(dt)


def _sorted_close(x, y, dtype):
    """Equal as multisets: sorted by real, then imaginary part (rounded first, so that
    conjugate pairs and near-ties sort alike in both)."""
    def key(v):
        v = np.asarray(v)
        r = np.round(v.real, 4) + 1j * np.round(v.imag, 4)
        return np.take_along_axis(v, np.argsort(r, axis=-1, kind="stable"), -1)
    _close(key(x), key(y), dtype)


@settings(settings.get_profile("oracle"))
@given(a=_general())
def test_eig(a):
    grad = a.dtype in (np.float64, np.complex128)
    e, t = _both(a, grad)
    (we, ve), (wt, vt) = ember.linalg.eig(e), torch.linalg.eig(t)
    assert str(we.dtype).split(".")[-1] == str(wt.dtype).split(".")[-1]
    assert we.shape == wt.shape and ve.shape == vt.shape
    _sorted_close(we.detach().numpy(), wt.detach().numpy(), a.dtype)
    _sorted_close(ember.linalg.eigvals(e).detach().numpy(), torch.linalg.eigvals(t).detach().numpy(), a.dtype)
    A = a.astype(np.complex128)
    v, w = ve.detach().numpy().astype(np.complex128), we.detach().numpy().astype(np.complex128)
    _close(A @ v, v * w[..., None, :], a.dtype)  # A V = V diag(L), unit columns
    _close(np.linalg.norm(v, axis=-2), np.ones(w.shape), a.dtype)
    if grad:  # losses of the eigenvalues and of |V|: invariant under the eigenvectors' phases, and
        # under their order when the weights are functions of the eigenvalue (here its real part)
        ((we.real * we.imag).sum() + (ve.abs() * we.real.unsqueeze(-2)).sum()).backward()
        ((wt.real * wt.imag).sum() + (vt.abs() * wt.real.unsqueeze(-2)).sum()).backward()
        _close(e.grad.numpy(), t.grad.numpy(), a.dtype)


@settings(settings.get_profile("oracle"))
@given(a=_general(("complex64", "complex128")))
def test_complex_eigh_and_svd(a):
    """Hermitian eigh and the SVD of complex matrices: values, |vectors|, and the gradients of
    phase-invariant losses (projectors, |U|); a phase-dependent loss raises in both."""
    n = a.shape[-1]
    h = a + np.conj(np.swapaxes(a, -1, -2)) + np.diag(3.0 * np.arange(1, n + 1))
    grad = a.dtype == np.complex128
    e, t = _both(h, grad)
    (we, ve), (wt, vt) = ember.linalg.eigh(e), torch.linalg.eigh(t)
    _close(we.detach().numpy(), wt.detach().numpy(), a.dtype)
    _close(ve.abs().detach().numpy(), vt.abs().detach().numpy(), a.dtype)
    if grad:
        w = torch.tensor(np.random.default_rng(0).standard_normal(h.shape))
        ((ve.abs() * ember.tensor(w.numpy())).sum() + we.sum()).backward()
        ((vt.abs() * w).sum() + wt.sum()).backward()
        _close(e.grad.numpy(), t.grad.numpy(), a.dtype)
    e, t = _both(a, grad)
    (ue, se, vhe), (ut, st_, vht) = ember.linalg.svd(e, full_matrices=False), torch.linalg.svd(t, full_matrices=False)
    _close(se.detach().numpy(), st_.detach().numpy(), a.dtype)
    _close((ue @ vhe).detach().numpy(), (ut @ vht).detach().numpy(), a.dtype)
    if grad:
        ((ue @ vhe).real.sum() + (ue.abs() * se.unsqueeze(-2)).sum()).backward()
        ((ut @ vht).real.sum() + (ut.abs() * st_.unsqueeze(-2)).sum()).backward()
        _close(e.grad.numpy(), t.grad.numpy(), a.dtype)
        for lib, x in ((ember, ember.tensor(a, requires_grad=True)), (torch, torch.tensor(a, requires_grad=True))):
            with pytest.raises(RuntimeError, match="specified up to multiplication by e"):
                lib.linalg.svd(x)[0].imag.sum().backward()
