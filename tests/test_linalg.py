"""ember.linalg: PyTorch's errors (LinAlgError for singular and indefinite inputs, with its
messages and batch elements; RuntimeError for shapes and dtypes), the ``_ex`` variants' info,
return types, the top-level aliases' semantics, and the host path on a backend without the
kernels (values are in the conformance suite, core/testing/suite/optable_factor.py)."""
import math

import numpy as np
import pytest

import ember
from ember import linalg as L


def _eye(n, *batch, dtype=ember.float64):
    return ember.eye(n, dtype=dtype).expand(batch + (n, n)).clone()


def test_linalg_error_is_a_runtime_error_exported_by_ember_linalg():
    assert issubclass(L.LinAlgError, RuntimeError)
    assert "linalg" in dir(ember) or ember.linalg is L


def test_inv_singular_names_batch_element_and_pivot():
    A = ember.zeros(2, 3, 3)
    A[0] = ember.eye(3)
    with pytest.raises(L.LinAlgError, match=r"^linalg.inv: \(Batch element 1\): The diagonal element 1 is zero, the "
                                            r"inversion could not be completed because the input matrix is singular.$"):
        L.inv(A)
    with pytest.raises(L.LinAlgError, match=r"^linalg.inv: The diagonal element 1 is zero"):
        L.inv(ember.zeros(3, 3))
    with pytest.raises(L.LinAlgError, match=r"^linalg.inv_ex: The diagonal element"):
        L.inv_ex(ember.zeros(3, 3), check_errors=True)


def test_inv_ex_returns_info_instead_of_raising():
    A = ember.zeros(2, 3, 3)
    A[0] = ember.eye(3)
    r = L.inv_ex(A)
    assert type(r).__name__ == "linalg_inv_ex" and r._fields == ("inverse", "info")
    assert r.info.dtype == ember.int32 and r.info.tolist() == [0, 1]
    np.testing.assert_array_equal(r.inverse[0].numpy(), np.eye(3))


def test_cholesky_not_positive_definite():
    A = ember.stack([ember.eye(3), -ember.eye(3)])
    with pytest.raises(L.LinAlgError, match=r"^linalg.cholesky: \(Batch element 1\): The factorization could not be "
                                            r"completed because the input is not positive-definite \(the leading "
                                            r"minor of order 1 is not positive-definite\).$"):
        L.cholesky(A)
    r = L.cholesky_ex(A)
    assert r._fields == ("L", "info") and r.info.tolist() == [0, 1]
    M = ember.tensor([[4.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert L.cholesky_ex(M).info.item() == 2  # the second leading minor is singular
    with pytest.raises(L.LinAlgError, match="^linalg.cholesky_ex: "):
        L.cholesky_ex(-ember.eye(2), check_errors=True)


def test_solve_singular_and_solve_ex():
    with pytest.raises(L.LinAlgError, match=r"^torch.linalg.solve: The solver failed because the input matrix is "
                                            r"singular.$"):
        L.solve(ember.zeros(3, 3), ember.ones(3))
    with pytest.raises(L.LinAlgError, match=r"^torch.linalg.solve: \(Batch element 0\): "):
        L.solve(ember.zeros(2, 3, 3), ember.ones(3))
    r = L.solve_ex(ember.zeros(2, 2), ember.ones(2))
    assert r._fields == ("result", "info") and r.info.item() == 1 and r.info.dim() == 0


def test_lu_factor_zero_pivot_is_a_runtime_error_and_lu_factor_ex_reports_it():
    with pytest.raises(RuntimeError, match=r"^torch.linalg.lu_factor: U\[1,1\] is zero"):
        L.lu_factor(ember.zeros(2, 2))
    LU, piv, info = L.lu_factor_ex(ember.zeros(2, 2))
    assert piv.tolist() == [1, 2] and piv.dtype == ember.int32 and info.item() == 1
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        L.lu_factor(ember.eye(2), pivot=False)


@pytest.mark.parametrize("fn, msg", [
    (lambda: L.inv(ember.zeros(3, 4)), "linalg.inv: A must be batches of square matrices, but they are 3 by 4 "
                                       "matrices"),
    (lambda: L.det(ember.zeros(3, 4)), "linalg.det: A must be batches of square matrices, but they are 3 by 4 "
                                       "matrices"),
    (lambda: L.cholesky(ember.zeros(3, 4)), "linalg.cholesky: A must be batches of square matrices"),
    (lambda: L.qr(ember.zeros(3)), "linalg.qr: The input tensor A must have at least 2 dimensions."),
    (lambda: L.svd(ember.zeros(3)), "linalg.svd: The input tensor A must have at least 2 dimensions."),
    (lambda: L.eigh(ember.zeros(3, 4)), "linalg.eigh: A must be batches of square matrices"),
    (lambda: L.inv(ember.zeros(3, 3, dtype=ember.int64)),
     "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: L.svd(ember.zeros(3, 3, dtype=ember.int32)),
     "linalg.svd: Expected a floating point or complex tensor as input. Got Int"),
    (lambda: L.solve(ember.eye(3), ember.ones(4)),
     r"linalg.solve: Incompatible shapes of A and B for the equation AX = B \(3x3 and 4x1\)"),
    (lambda: L.solve(ember.eye(3), ember.eye(3, dtype=ember.float64)),
     "linalg.solve: Expected A and B to have the same dtype, but found A of type Float and B of type Double instead"),
    (lambda: L.solve_triangular(ember.eye(3), ember.ones(3), upper=True),
     "linalg.solve_triangular: The input tensor B must have at least 2 dimensions."),
    (lambda: L.solve_triangular(ember.eye(3), ember.ones(4, 3), upper=True),
     r"linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B \(3x3 and 4x3\)"),
    (lambda: L.qr(ember.eye(3), mode="x"), "qr received unrecognized mode 'x'"),
    (lambda: L.eigh(ember.eye(3), UPLO="X"), "Expected UPLO argument to be 'L' or 'U', but got X"),
    (lambda: L.inv(ember.eye(3).half()), "linalg.inv: Low precision dtypes not supported. Got Half"),
    (lambda: L.multi_dot([ember.ones(3, 3)]), r"multi_dot\(\): expected at least 2 tensors but got 1"),
    (lambda: L.norm(ember.ones(2, 2, 2), ord=2), "linalg.norm: If dim is not specified but ord is, the input must be "
                                                 "1D or 2D. Got 3D."),
    (lambda: L.matrix_norm(ember.ones(2, 2), ord=3), "linalg.matrix_norm: Order 3 not supported."),
    (lambda: L.cross(ember.ones(3), ember.ones(2, 3)), "linalg.cross: inputs must have the same number of dimensions."),
    (lambda: L.vander(ember.ones(3), N=1), "N must be greater than 1."),
    (lambda: L.tensorinv(ember.ones(2, 3, 4), ind=1), r"prod\(self.shape\[ind:\]\) == prod\(self.shape\[:ind\]\), "
                                                     "but got 12 != 2"),
    (lambda: L.lstsq(ember.ones(3, 2), ember.ones(3, 1), driver="x"), "parameter `driver` should be one of"),
    (lambda: L.householder_product(ember.ones(2, 3), ember.ones(1)),
     r"input.shape\[-2\] must be greater than or equal to input.shape\[-1\]"),
])
def test_shape_and_dtype_errors(fn, msg):
    with pytest.raises(RuntimeError, match=msg):
        fn()


def test_low_precision_factorizations_are_not_implemented():
    with pytest.raises(NotImplementedError, match="cholesky_cpu"):
        L.cholesky(ember.eye(3).bfloat16())


def test_return_types():
    A = _eye(3) * 2
    assert L.slogdet(A)._fields == ("sign", "logabsdet") and type(L.slogdet(A)).__name__ == "linalg_slogdet"
    assert type(ember.slogdet(A)).__name__ == "slogdet"
    assert L.eigh(A)._fields == ("eigenvalues", "eigenvectors")
    assert L.svd(A)._fields == ("U", "S", "Vh") and ember.svd(A)._fields == ("U", "S", "V")
    assert L.qr(A)._fields == ("Q", "R") and type(ember.qr(A)).__name__ == "qr"
    assert L.lu(A)._fields == ("P", "L", "U") and L.lu_factor(A)._fields == ("LU", "pivots")
    assert L.lu_factor_ex(A)._fields == ("LU", "pivots", "info")
    assert ember.lu_unpack(*L.lu_factor(A))._fields == ("P", "L", "U")
    assert ember.triangular_solve(A, A)._fields == ("solution", "cloned_coefficient")
    assert L.lstsq(A, A)._fields == ("solution", "residuals", "rank", "singular_values")


def test_torch_svd_returns_v_and_zero_factors_without_compute_uv():
    a = ember.tensor(np.arange(6.0).reshape(3, 2) + np.eye(3, 2))
    U, S, V = ember.svd(a)
    np.testing.assert_allclose((U * S) @ V.mT, a.numpy(), atol=1e-12)
    assert U.shape == (3, 2) and V.shape == (2, 2)
    U, S, V = ember.svd(a, some=False)
    assert U.shape == (3, 3)
    U, S, V = ember.svd(a, compute_uv=False)
    assert U.shape == (3, 3) and V.shape == (2, 2) and not U.any() and not V.any()
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(a.numpy(), compute_uv=False))


def test_qr_modes_and_lstsq_outputs():
    a = ember.tensor(np.random.default_rng(0).standard_normal((5, 3)))
    Q, R = L.qr(a, mode="complete")
    assert Q.shape == (5, 5) and R.shape == (5, 3)
    Q, R = L.qr(a, mode="r")
    assert Q.numel() == 0 and R.shape == (3, 3)
    r = L.lstsq(a, a[:, :2])
    assert r.residuals.numel() == 0 and r.rank.item() == 3 and r.singular_values.numel() == 0  # gelsy
    r = L.lstsq(a, a[:, :2], driver="gelsd")
    assert r.residuals.shape == (2,) and r.singular_values.shape == (3,)
    assert L.lstsq(ember.ones(3, 2), ember.ones(3)).rank.item() == 1


def test_det_logdet_and_slogdet_of_negative_and_singular_matrices():
    A = ember.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=ember.float64)
    assert L.det(A).item() == -1.0
    assert math.isnan(ember.logdet(A).item())
    assert ember.logdet(ember.zeros(2, 2)).item() == -math.inf
    s, la = L.slogdet(ember.zeros(2, 2))
    assert s.item() == 0 and la.item() == -math.inf


def test_matrix_power_negative_and_singular():
    A = ember.tensor([[2.0, 1.0], [1.0, 1.0]], dtype=ember.float64)
    np.testing.assert_allclose(L.matrix_power(A, -3).numpy(), np.linalg.matrix_power(A.numpy(), -3))
    np.testing.assert_allclose(ember.matrix_power(A, -1).numpy(), np.linalg.inv(A.numpy()))
    with pytest.raises(L.LinAlgError):
        L.matrix_power(ember.zeros(2, 2), -1)


def test_cond_of_singular_matrix_is_inf_in_the_other_norms():
    assert L.cond(ember.zeros(2, 2), "fro").item() == math.inf


def test_solve_triangular_reads_one_triangle_and_zero_diagonal_gives_inf():
    A = ember.tensor([[2.0, 5.0], [7.0, 4.0]], dtype=ember.float64)
    b = ember.ones(2, 1, dtype=ember.float64)
    np.testing.assert_allclose(L.solve_triangular(A, b, upper=True).numpy(),
                               np.linalg.solve(np.triu(A.numpy()), b.numpy()))
    x = L.solve_triangular(ember.zeros(2, 2), ember.ones(2, 1), upper=True)
    assert not ember.isfinite(x).all()


def test_eigh_reads_the_uplo_triangle():
    A = ember.tensor([[2.0, 100.0], [1.0, 2.0]], dtype=ember.float64)
    np.testing.assert_allclose(L.eigvalsh(A).numpy(), [1.0, 3.0])
    np.testing.assert_allclose(L.eigvalsh(A, UPLO="U").numpy(), [-98.0, 102.0])


def test_svd_backward_of_a_gauge_dependent_loss_is_finite():
    a = ember.tensor(np.random.default_rng(1).standard_normal((4, 3)), requires_grad=True)
    U, S, Vh = L.svd(a, full_matrices=False)
    (U.sum() + Vh.sum()).backward()
    assert ember.isfinite(a.grad).all()


def test_qr_r_mode_is_not_differentiable():
    a = ember.eye(3, dtype=ember.float64).requires_grad_()
    with pytest.raises(RuntimeError, match="mode='r'"):
        L.qr(a, mode="r").R.sum().backward()


def test_host_path_copies_through_numpy_on_a_backend_without_the_kernel():
    from ember.ops import OPS
    from ember.ops.registry import _host_run
    op = OPS["_linalg_inv_ex"]
    assert op.host is not None and op.decomposition is None
    a = ember.tensor([[2.0, 0.0], [0.0, 4.0]])
    inv, info = _host_run(op, a._device, (a,))
    np.testing.assert_allclose(inv.numpy(), [[0.5, 0.0], [0.0, 0.25]])
    assert info.shape == () and info.dtype == ember.int32


def test_coverage_table_reports_host_ops():
    from ember.testing.pytest_plugin import coverage_table
    t = coverage_table("cpu_numpy")
    assert "host (numpy, copied through the host): -" in t  # cpu_numpy implements them all
    assert "_linalg_svd" in t.split("native:")[1].split("\n")[0]


def test_empty_matrices():
    LU, piv = L.lu_factor(ember.zeros(0, 0))
    assert LU.shape == (0, 0) and piv.shape == (0,) and piv.dtype == ember.int32
    assert L.det(ember.zeros(0, 0)).item() == 1.0
    assert L.inv(ember.zeros(0, 3, 3)).shape == (0, 3, 3)
    assert L.cond(ember.zeros(0, 0)).item() == 0.0
    assert L.svdvals(ember.zeros(2, 0, 3)).shape == (2, 0)
