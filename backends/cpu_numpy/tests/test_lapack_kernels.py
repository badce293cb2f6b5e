"""The per-matrix LAPACK path of ``inv`` (``ember_cpu_numpy.kernels.lapack``): same shapes,
dtypes, values and ``info`` as the host function (numpy.linalg) it replaces from ``MIN_N`` up,
through the kernel and through ``ember.linalg``. The conformance suite's matrices
are smaller than ``MIN_N``, so these sizes are tested here."""
import numpy as np
import pytest

import ember
from ember.ops import linalg_host as H
from ember_cpu_numpy.kernels import lapack

pytest.importorskip("scipy.linalg", reason="the LAPACK paths need scipy (without it the host functions run)")

DTYPES = [(np.float32, 2e-3), (np.float64, 1e-9), (np.complex64, 2e-3), (np.complex128, 1e-9)]


def _rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("shape", [(3, 20, 20), (2, 2, 40, 40), (33, 33), (3, 17, 17), (2, 33, 33), (0, 20, 20)])
def test_inv_matches_the_host_function(dtype, tol, shape):
    a = _rand(shape, dtype) + 5 * np.eye(shape[-1], dtype=dtype)
    x, info = lapack.inv_ex(a)
    y, info2 = H.inv_ex(a)
    assert x.shape == y.shape and x.dtype == y.dtype
    assert info.shape == info2.shape and info.dtype == np.int32 and not info.any()
    np.testing.assert_allclose(x, y, rtol=tol, atol=tol)
    if a.size:
        np.testing.assert_allclose(a @ x, np.broadcast_to(np.eye(shape[-1]), a.shape), atol=tol * 10)


def test_inv_of_singular_matrices_is_nan_with_getrfs_info():
    a = _rand((3, 24, 24), np.float64)
    a[1] = 0
    a[2, :, 7] = 0  # column 8 is zero: the eighth pivot is the first zero one
    x, info = lapack.inv_ex(a)
    assert info.tolist() == [0, 1, 8] == H.inv_ex(a)[1].tolist()
    assert np.isnan(x[1:]).all() and np.isfinite(x[0]).all()


def test_inv_of_a_strided_input():
    a = _rand((24, 24, 5), np.float64) + 5 * np.eye(24)[:, :, None]
    view = a.transpose(2, 0, 1)[::2]
    np.testing.assert_allclose(lapack.inv_ex(view)[0], np.linalg.inv(view), rtol=1e-10, atol=1e-12)


def test_small_matrices_take_numpys_batched_call(monkeypatch):
    calls = []
    monkeypatch.setattr(lapack, "_routine", lambda *args: calls.append(args))
    n = lapack.MIN_N["inv"] - 1
    x, info = lapack.inv_ex(_rand((10, n, n), np.float64) + 5 * np.eye(n))
    assert x.shape == (10, n, n) and info.shape == (10,)
    assert calls == []


def test_the_linalg_functions_use_it():
    a = ember.tensor(_rand((4, 40, 40), np.float64) + 5 * np.eye(40))
    inv = ember.linalg.inv(a)
    assert inv.stride() == (1600, 1, 40)  # column-major matrices, PyTorch's strides for inv
    assert ember.allclose(a @ inv, ember.eye(40, dtype=ember.float64).expand(4, 40, 40), atol=1e-10)
    s = a.clone()
    s[2] = 0
    inverse, info = ember.linalg.inv_ex(s)
    assert info.tolist() == [0, 0, 1, 0] and info.dtype == ember.int32
    assert inverse[2].isnan().all()
    with pytest.raises(ember.linalg.LinAlgError, match=r"\(Batch element 2\): The diagonal element 1 is zero"):
        ember.linalg.inv(s)
