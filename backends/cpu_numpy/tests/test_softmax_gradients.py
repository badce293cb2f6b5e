"""The softmax / log_softmax gradient kernels: the decomposition's values, and no float32
subnormals in what they return (an OpenBLAS GEMM fed a subnormal-filled gradient ran 30x slower)."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops.nn import activation as A


def _subnormals(t):
    a = t.detach().numpy()
    return int(np.sum((np.abs(a) < np.finfo(np.float32).tiny) & (a != 0)))


@pytest.mark.parametrize("op, decomp", [(A._softmax_backward_data, A._softmax_backward_decomp),
                                        (A._log_softmax_backward_data, A._log_softmax_backward_decomp)])
def test_kernel_equals_the_decomposition(op, decomp):
    g = ember.Generator().manual_seed(0)
    x = ember.randn(7, 9, dtype=ember.float64, generator=g)
    gr = ember.randn(7, 9, dtype=ember.float64, generator=g)
    for dim in (0, 1):
        y = F.softmax(x, dim) if op is A._softmax_backward_data else F.log_softmax(x, dim)
        assert ember.equal(op(gr, y, dim), decomp(gr, y, dim))  # float64: the same operations
        y32, g32 = y.float(), gr.float()
        assert ember.allclose(op(g32, y32, dim), decomp(g32, y32, dim), rtol=1e-6, atol=1e-7)


def test_no_subnormals_from_a_language_model_loss():
    g = ember.Generator().manual_seed(1)
    logits = (ember.randn(1024, 256, generator=g) * 11).requires_grad_()
    target = ember.randint(0, 256, (1024,), generator=g)
    F.cross_entropy(logits, target).backward()
    assert _subnormals(logits.grad) == 0
    ref = logits.detach().double().requires_grad_()
    F.cross_entropy(ref, target).backward()
    assert ember.allclose(logits.grad.double(), ref.grad, atol=1e-7)
    p = F.softmax(logits.detach() * 3, 1)
    assert _subnormals(p) == 0 and ember.allclose(p.sum(1), ember.ones(1024))


def test_nan_inf_and_double_backward():
    x = ember.tensor([[0.0, float("nan"), 1.0], [float("-inf"), 0.0, 2.0]], requires_grad=True)
    F.log_softmax(x, 1).sum().backward()
    assert ember.isnan(x.grad[0]).all() and not ember.isnan(x.grad[1]).any()
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    for f in (F.softmax, F.log_softmax):
        assert ember.autograd.gradcheck(lambda t: f(t, 1), (x,))
        assert ember.autograd.gradgradcheck(lambda t: f(t, 1), (x,))
