"""linalg.ldl_factor, ldl_factor_ex, ldl_solve: LAPACK sytrf's compact form (PyTorch's LD and
pivots, 2x2 blocks included), info, errors, and no derivative, as in PyTorch. Values on random
inputs are in the conformance suite and the PyTorch oracle."""
import pytest

import ember
from ember import linalg as L


def _a():
    return ember.tensor([[1.0, 2.0, 3.0], [2.0, 0.5, 1.0], [3.0, 1.0, 0.1]], dtype=ember.float64)


def test_ldl_factor_is_lapacks_compact_form_with_a_2x2_block():
    r = L.ldl_factor_ex(_a())
    assert type(r).__name__ == "linalg_ldl_factor_ex" and r._fields == ("LD", "pivots", "info")
    assert r.pivots.dtype == ember.int32 and r.pivots.tolist() == [-3, -3, 3] and r.info.item() == 0
    expected = [[1.0, 0.0, 0.0], [3.0, 0.1, 0.0], [0.3146067, 0.5617978, -0.6910112]]  # PyTorch's LD
    for row, exp in zip(r.LD.tolist(), expected):
        assert row == pytest.approx(exp, abs=1e-6)
    LD, piv = L.ldl_factor(_a())
    B = ember.tensor([[1.0, 0.0], [2.0, 1.0], [0.0, -1.0]], dtype=ember.float64)
    assert ember.allclose(_a() @ L.ldl_solve(LD, piv, B), B)


def test_ldl_factor_reads_the_lower_triangle_and_hermitian_conjugates():
    A = ember.tensor([[2.0, 99.0], [1 - 1j, -3.0]], dtype=ember.complex128)  # the upper 99 is ignored
    H = ember.tensor([[2.0, 1 + 1j], [1 - 1j, -3.0]], dtype=ember.complex128)
    LD, piv = L.ldl_factor(A, hermitian=True)
    assert ember.allclose(L.ldl_solve(LD, piv, ember.eye(2, dtype=ember.complex128), hermitian=True),
                          L.inv(H))
    S = ember.tensor([[2.0, 1 - 1j], [1 - 1j, -3.0]], dtype=ember.complex128)  # complex symmetric
    LD, piv = L.ldl_factor(A)
    assert ember.allclose(L.ldl_solve(LD, piv, ember.eye(2, dtype=ember.complex128)), L.inv(S))


def test_ldl_singular_d_info_and_errors():
    r = L.ldl_factor_ex(ember.zeros(2, 2))
    assert r.info.item() == 1 and r.pivots.tolist() == [1, 2]
    with pytest.raises(L.LinAlgError, match=r"^torch.linalg.ldl_factor: The factorization could not be completed"):
        L.ldl_factor(ember.zeros(2, 2))
    with pytest.raises(L.LinAlgError, match=r"^torch.linalg.ldl_factor_ex: "):
        L.ldl_factor_ex(ember.zeros(2, 2), check_errors=True)
    with pytest.raises(RuntimeError, match=r"^torch.linalg.ldl_factor_ex: A must be batches of square matrices, but "
                                           r"they are 2 by 3 matrices$"):
        L.ldl_factor(ember.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"Expected a floating point or complex tensor as input. Got Long$"):
        L.ldl_factor(ember.ones(2, 2, dtype=ember.int64))
    LD, piv = L.ldl_factor(_a())
    with pytest.raises(RuntimeError, match=r"^Expected b and A to have the same dtype, but found b of type Float and A "
                                           r"of type Double instead.$"):
        L.ldl_solve(LD, piv, ember.ones(3, 1))
    with pytest.raises(RuntimeError, match=r"^torch.linalg.ldl_solve: Expected LD.shape\[:-1\] and pivots.shape to be "
                                           r"the same, but got pivots with shape \[2\] instead$"):
        L.ldl_solve(LD, piv[:2], ember.ones(3, 1, dtype=ember.float64))
    with pytest.raises(RuntimeError, match=r"^torch.linalg.ldl_solve: Expected pivots to be integers. Got Float$"):
        L.ldl_solve(LD, piv.float(), ember.ones(3, 1, dtype=ember.float64))
    with pytest.raises(RuntimeError, match=r"^Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is 3 "
                                           r"by 3 but each b matrix is 4 by 1$"):
        L.ldl_solve(LD, piv, ember.ones(4, 1, dtype=ember.float64))


def test_ldl_is_not_differentiable_as_in_pytorch():
    A = _a().requires_grad_()
    with pytest.raises(RuntimeError, match="^derivative for aten::linalg_ldl_factor_ex is not implemented$"):
        L.ldl_factor(A).LD.sum().backward()
    LD, piv = L.ldl_factor(_a())
    B = ember.ones(3, 1, dtype=ember.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="^derivative for aten::linalg_ldl_solve is not implemented$"):
        L.ldl_solve(LD, piv, B).sum().backward()


def test_ldl_batched_and_empty():
    A = ember.stack([_a(), 2 * _a()])
    LD, piv = L.ldl_factor(A)
    assert piv.shape == (2, 3) and piv.tolist()[0] == piv.tolist()[1]
    assert ember.allclose(A @ L.ldl_solve(LD, piv, ember.ones(2, 3, 1, dtype=ember.float64)),
                          ember.ones(2, 3, 1, dtype=ember.float64))
    assert L.ldl_factor(ember.empty(2, 0, 0)).pivots.shape == (2, 0)
