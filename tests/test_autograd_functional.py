"""ember.autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp against closed forms, with
PyTorch's result nesting and strict-mode errors."""
import pytest

import ember
from ember.autograd import functional as AF

F64 = ember.float64


def r(*shape, seed=0, device="cpu"):
    g = ember.Generator().manual_seed(seed)
    return ember.randn(*shape, generator=g, dtype=F64).to(device)


def close(a, b, tol=1e-10):
    assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
    assert ember.allclose(a.cpu(), b.cpu(), atol=tol, rtol=tol)


def test_jacobian_of_elementwise_and_linear_maps(device):
    x = r(4, device=device)
    A = r(3, 4, seed=1, device=device)
    close(AF.jacobian(ember.sin, x), ember.diag(ember.cos(x)))
    close(AF.jacobian(lambda v: A @ v, x), A)
    # a tuple of inputs and outputs nests as ((dy0/dx0, dy0/dx1), (dy1/dx0, dy1/dx1))
    J = AF.jacobian(lambda a, b: (a * b, a + b), (x, x * 2))
    assert isinstance(J, tuple) and len(J) == 2 and isinstance(J[0], tuple)
    close(J[0][0], ember.diag(x * 2))
    close(J[0][1], ember.diag(x))
    close(J[1][1], ember.eye(4, dtype=F64, device=device))


def test_jacobian_shapes_follow_inputs_and_outputs():
    x = r(2, 3)
    assert AF.jacobian(lambda v: v.sum(0), x).shape == (3, 2, 3)
    assert AF.jacobian(lambda v: v.sum(), x).shape == (2, 3)
    J = AF.jacobian(lambda v: (v * 2,), x)
    assert isinstance(J, tuple) and J[0].shape == (2, 3, 2, 3)
    J = AF.jacobian(lambda v: v * 2, (x,))
    assert isinstance(J, tuple) and J[0].shape == (2, 3, 2, 3)


def test_jacobian_forward_mode_needs_vectorize_and_matches_reverse():
    x = r(3)
    f = lambda v: ember.stack([v.prod(), (v ** 2).sum()])  # noqa: E731
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        AF.jacobian(f, x, strategy="forward-mode")
    close(AF.jacobian(f, x, vectorize=True, strategy="forward-mode"), AF.jacobian(f, x))
    close(AF.jacobian(f, x, vectorize=True), AF.jacobian(f, x))
    with pytest.raises(AssertionError, match="Expected strategy"):
        AF.jacobian(f, x, strategy="bad")


def test_hessian_of_quadratic_form(device):
    A = r(4, 4, seed=2, device=device)
    x = r(4, device=device)
    H = AF.hessian(lambda v: v @ A @ v, x)
    close(H, A + A.t())
    H2 = AF.hessian(lambda v: v @ A @ v, x, vectorize=True, outer_jacobian_strategy="forward-mode")
    close(H2, A + A.t())
    Hs = AF.hessian(lambda a, b: (a * b).sum(), (x, x))
    close(Hs[0][1], ember.eye(4, dtype=F64, device=device))
    close(Hs[0][0], ember.zeros(4, 4, dtype=F64, device=device))


def test_vjp_jvp_hvp_vhp_values():
    x = r(3)
    v = r(3, seed=5)
    out, g = AF.vjp(lambda a: a ** 3, x, v)
    close(out, x ** 3)
    close(g, 3 * x ** 2 * v)
    out, jv = AF.jvp(lambda a: a ** 3, x, v)
    close(jv, 3 * x ** 2 * v)
    out, hv = AF.hvp(lambda a: (a ** 3).sum(), x, v)
    close(hv, 6 * x * v)
    out, vh = AF.vhp(lambda a: (a ** 3).sum(), x, v)
    close(vh, 6 * x * v)
    close(out, (x ** 3).sum())
    # a scalar function and a single-element input need no v
    out, g = AF.vjp(lambda a: a.sum(), x)
    close(g, ember.ones(3, dtype=F64))
    out, jv = AF.jvp(lambda a: a * 3, x[:1])
    close(jv, ember.tensor([3.0], dtype=F64))


def test_results_are_detached_unless_create_graph():
    x = r(3).requires_grad_()
    _, g = AF.vjp(lambda a: (a ** 3).sum(), x)
    assert not g.requires_grad
    _, g = AF.vjp(lambda a: (a ** 3).sum(), x, create_graph=True)
    assert g.requires_grad
    g.sum().backward()
    close(x.grad, 6 * x.detach())


def test_v_validation_errors():
    x = r(3)
    with pytest.raises(RuntimeError, match="v can only be None if the user-provided function returns a single"):
        AF.vjp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match="v has invalid size: should be"):
        AF.vjp(lambda a: a * 2, x, ember.ones(4))
    with pytest.raises(RuntimeError, match="v can only be None if the input to the user-provided function"):
        AF.jvp(lambda a: a.sum(), x)
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2 but got 1"):
        AF.jvp(lambda a, b: a + b, (x, x), (x,))
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors but the given inputs has type"):
        AF.jacobian(lambda a: a, [x])
    with pytest.raises(TypeError, match="outputs of the user-provided function given to jacobian"):
        AF.jacobian(lambda a: 3, x)
    with pytest.raises(RuntimeError, match="should contain a single element"):
        AF.hessian(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match="The function given to hvp should return a single Tensor"):
        AF.hvp(lambda a: (a.sum(),), x, x)


def test_strict_mode_errors():
    x = r(3)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients"):
        AF.jacobian(lambda a: ember.zeros(3), x, strict=True)
    with pytest.raises(RuntimeError, match="independent of input 0. This is not allowed in strict mode when "
                                           "create_graph=True"):
        AF.jacobian(lambda a: a * 2, x, strict=True, create_graph=True)
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0 is "
                                           "independent of the input"):
        AF.hessian(lambda a: (a * 2).sum(), x, strict=True)
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not supported together"):
        AF.jacobian(lambda a: a * 2, x, strict=True, vectorize=True)
    with pytest.raises(RuntimeError, match="The output of the user-provided function is independent of input 1"):
        AF.vjp(lambda a, b: a * 2, (x, x), ember.ones(3, dtype=F64), strict=True)
    # without strict, an unused input gets zeros
    _, g = AF.vjp(lambda a, b: a * 2, (x, x), ember.ones(3, dtype=F64))
    close(g[1], ember.zeros(3, dtype=F64))
