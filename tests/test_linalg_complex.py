"""ember.linalg on complex tensors and the general eigendecomposition (eig, eigvals): result
dtypes, return types, PyTorch's errors (including its refusal of losses that depend on the free
phases of complex singular vectors and eigenvectors), the conjugation conventions of vdot and
vecdot, LAPACK's complex pivoting. Values and gradchecks are in the conformance suite
(core/testing/suite/optable_factor_complex.py)."""
import numpy as np
import pytest

import ember
from ember import linalg as L

PHASE = r"specified up to multiplication by e\^\{i phi\}"


def _rot(dtype=ember.float64):
    return ember.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=dtype)


def test_eig_of_a_real_matrix_is_complex():
    r = L.eig(_rot())
    assert type(r).__name__ == "linalg_eig" and r._fields == ("eigenvalues", "eigenvectors")
    assert r.eigenvalues.dtype == ember.complex128 and r.eigenvectors.dtype == ember.complex128
    assert sorted(r.eigenvalues.tolist(), key=lambda z: z.imag) == pytest.approx([-1j, 1j])
    assert L.eigvals(_rot(ember.float32)).dtype == ember.complex64
    assert L.eig(ember.eye(2, dtype=ember.complex64)).eigenvalues.dtype == ember.complex64


def test_eig_satisfies_its_definition_batched():
    A = ember.randn(3, 4, 4, dtype=ember.complex128, generator=ember.Generator().manual_seed(3))
    w, V = L.eig(A)
    assert w.shape == (3, 4) and V.shape == (3, 4, 4)
    assert ember.allclose(A @ V, V * w.unsqueeze(-2))
    assert ember.allclose(L.vector_norm(V, dim=-2), ember.ones(3, 4, dtype=ember.float64))
    np.testing.assert_allclose(np.sort_complex(L.eigvals(A).numpy()), np.sort_complex(w.numpy()))


def test_eig_empty_and_errors():
    r = L.eig(ember.empty(2, 0, 0))
    assert r.eigenvalues.shape == (2, 0) and r.eigenvalues.dtype == ember.complex64
    with pytest.raises(RuntimeError, match=r"^linalg.eig: A must be batches of square matrices, but they are 2 by 3 "
                                           r"matrices$"):
        L.eig(ember.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"^linalg.eigvals: The input tensor A must have at least 2 dimensions.$"):
        L.eigvals(ember.ones(3))
    with pytest.raises(RuntimeError, match="^Unknown Complex ScalarType for Long$"):
        L.eig(ember.ones(2, 2, dtype=ember.int64))
    with pytest.raises(NotImplementedError, match="linalg_eig_out_cpu"):
        L.eigvals(ember.ones(2, 2, dtype=ember.float16))
    with pytest.raises(RuntimeError, match=r"^torch.linalg.eig: input tensor should not contain infs or NaNs.$"):
        L.eig(ember.tensor([[1.0, 0.0], [0.0, float("nan")]]))


def test_eig_gradient_of_the_eigenvalues_is_the_transposed_projector_sum():
    # d sum(L) / dA = I (the trace), for real and complex input alike
    for dt in (ember.float64, ember.complex128):
        A = ember.randn(3, 3, dtype=dt, generator=ember.Generator().manual_seed(1), requires_grad=True)
        L.eigvals(A).sum().real.backward()
        assert A.grad.dtype == dt
        assert ember.allclose(A.grad, ember.eye(3, dtype=dt))


def test_phase_dependent_losses_are_refused():
    A = ember.randn(3, 3, dtype=ember.complex128, generator=ember.Generator().manual_seed(2), requires_grad=True)
    with pytest.raises(RuntimeError, match="^linalg_eig_backward: The eigenvectors in the complex case are " + PHASE):
        L.eig(A)[1].real.sum().backward()
    with pytest.raises(RuntimeError, match="^linalg_eig_backward: The eigenvectors in the complex case are " + PHASE):
        L.eig(_rot().requires_grad_())[1].real.sum().backward()  # a real input with complex eigenvectors too
    with pytest.raises(RuntimeError, match="^linalg_eigh_backward: The eigenvectors in the complex case are " + PHASE):
        L.eigh(A @ A.mH)[1].real.sum().backward()
    with pytest.raises(RuntimeError, match="^svd_backward: The singular vectors in the complex case are " + PHASE):
        L.svd(A)[2].imag.sum().backward()
    # losses that do not depend on the phases are differentiable
    L.eig(A)[1].abs().sum().backward()
    U, S, Vh = L.svd(A)
    (U @ Vh).real.sum().backward()


def test_complex_results_of_real_valued_functions_are_real():
    A = ember.randn(2, 3, 3, dtype=ember.complex64, generator=ember.Generator().manual_seed(0))
    for r in (L.norm(A), L.vector_norm(A, 3), L.matrix_norm(A, "nuc"), L.matrix_norm(A, 1), L.svdvals(A),
              L.cond(A), L.eigvalsh(A @ A.mH), L.slogdet(A).logabsdet):
        assert r.dtype == ember.float32
    assert L.slogdet(A).sign.dtype == ember.complex64
    assert ember.allclose(L.slogdet(A).sign.abs(), ember.ones(2))
    assert L.matrix_rank(A).dtype == ember.int64


def test_vdot_and_vecdot_conjugate_the_first_argument_dot_does_not():
    a = ember.tensor([1 + 2j, 3j])
    b = ember.tensor([2 - 1j, 1 + 1j])
    assert ember.vdot(a, b).item() == pytest.approx((1 - 2j) * (2 - 1j) + (-3j) * (1 + 1j))
    assert ember.dot(a, b).item() == pytest.approx((1 + 2j) * (2 - 1j) + 3j * (1 + 1j))
    assert L.vecdot(a, b).item() == pytest.approx(ember.vdot(a, b).item())
    assert a.vdot(b).item() == ember.vdot(a, b).item()
    with pytest.raises(RuntimeError, match="^dot : expected both vectors to have same dtype, but found ComplexFloat "
                                           "and ComplexDouble$"):
        ember.vdot(a, b.to(ember.complex128))


def test_lu_pivots_on_the_sum_of_the_parts_moduli_as_lapack():
    # |3| > |2+2j| but |re| + |im| picks the second row, as LAPACK's complex getrf (and PyTorch)
    A = ember.tensor([[3 + 0j, 1], [2 + 2j, 5]])
    assert L.lu_factor(A).pivots.tolist() == [2, 2]
    P, Lo, U = L.lu(A)
    assert ember.allclose(P @ Lo @ U, A)


def test_cholesky_of_a_hermitian_matrix_reads_its_lower_triangle():
    A = ember.tensor([[4.0, 1 - 2j], [1 + 2j, 6.0]], dtype=ember.complex128)
    Lo = L.cholesky(A)
    assert ember.allclose(Lo @ Lo.mH, A)
    assert Lo.diagonal().imag.abs().max().item() == 0
    with pytest.raises(L.LinAlgError, match="leading minor of order 2"):
        L.cholesky(ember.tensor([[1.0, 2j], [-2j, 1.0]]))


def test_logdet_of_a_complex_matrix_is_the_complex_log_of_det():
    A = ember.tensor([[1 + 1j, 2.0], [0.5j, 3 - 1j]], dtype=ember.complex128)
    assert ember.logdet(A).item() == pytest.approx(np.log(np.linalg.det(A.numpy())))
