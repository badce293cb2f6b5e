"""The rms_norm op on every installed backend (the `device` fixture) against a numpy float64
reference, on every layout and floating dtype, with gradcheck and double backward; its fused
kernels against the decomposition; its refusals; and the decomposition on a backend with the
primitives only."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close, check_grad, check_op


def ref(x, w, k, eps):
    dims = tuple(range(x.ndim - k, x.ndim))
    y = x / np.sqrt((x * x).mean(dims, keepdims=True) + eps)
    return y if w is None else y * w


DTYPES = (ember.float32, ember.float64, ember.float16, ember.bfloat16)


def test_reachable_after_install():
    import ember_rmsnorm.op
    op = ember.ops.OPS["rms_norm"]
    assert ember.ops.rms_norm is ember.rms_norm is ember_rmsnorm.op.FRONT is op.fn
    assert op.plugin == "rmsnorm" and op.meta is not None and op.decomposition is not None and op.backward is not None
    # the front end is generated from the declaration, as for ember's own ops: it has out=
    x = ember.randn(2, 3)
    out = ember.empty(2, 3)
    assert ember.rms_norm(x, (3,), out=out) is out
    assert_close(out, ember_rmsnorm.op.rms_norm(x, (3,)))


def test_values_and_gradients(device):
    check_op(lambda x, w: ember.rms_norm(x, (6,), w, 1e-5), lambda x, w: ref(x, w, 1, 1e-5), [(4, 6), (6,)],
             device=device, dtypes=DTYPES, grad=True, name="rms_norm")
    check_op(lambda x, w: ember.rms_norm(x, (3, 4), w, 1e-3), lambda x, w: ref(x, w, 2, 1e-3), [(2, 5, 3, 4), (3, 4)],
             device=device, dtypes=DTYPES, grad=True, name="rms_norm")
    check_op(lambda x: ember.rms_norm(x, [300]), lambda x: ref(x, None, 1, 0.0), [(3, 300)], device=device,
             dtypes=DTYPES, grad=True, name="rms_norm")
    check_op(lambda x: ember.rms_norm(x, 7, eps=0.5), lambda x: ref(x, None, 1, 0.5), [(7,)], device=device,
             dtypes=DTYPES, grad=True, name="rms_norm")


def test_default_eps_is_the_dtype_epsilon(device):
    x = ember.zeros(2, 3, device=device)  # all zero: 0 / sqrt(0 + eps) = 0, and no NaN
    assert ember.rms_norm(x, (3,)).tolist() == [[0.0] * 3] * 2
    x = ember.full((1, 4), 1e-4, device=device)
    expected = 1e-4 / np.sqrt(1e-8 + np.finfo(np.float32).eps)
    assert_close(ember.rms_norm(x, (4,)), np.full((1, 4), expected), rtol=1e-5)


def test_result_dtype_is_the_input_dtype(device):
    x = ember.randn(3, 4, device=device).to(ember.bfloat16)
    assert ember.rms_norm(x, (4,), ember.ones(4, device=device)).dtype is ember.bfloat16
    assert ember.rms_norm(ember.randn(3, 4, device=device), (4,), ember.ones(4, dtype=ember.float16,
                                                                              device=device)).dtype is ember.float32
    empty = ember.rms_norm(ember.zeros(0, 4, device=device), (4,))
    assert tuple(empty.shape) == (0, 4)


def _f64(device):
    try:
        ember.zeros(1, dtype=ember.float64, device=device)
        return True
    except TypeError:
        return False


def test_double_backward(device):
    if not _f64(device):
        pytest.skip("gradgradcheck needs float64, which this device lacks")
    x = ember.randn(3, 5, dtype=ember.float64, device=device, requires_grad=True)
    w = ember.randn(5, dtype=ember.float64, device=device, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda a, b: ember.rms_norm(a, (5,), b, 1e-3), (x, w))
    assert ember.autograd.gradgradcheck(lambda a: ember.rms_norm(a, (5,)), (x,))
    y = ember.rms_norm(x, (5,), w)
    assert y.grad_fn.name() == "RmsNormBackward0"
    (gx,) = ember.autograd.grad(y.sum(), x, create_graph=True)
    assert gx.requires_grad and gx.grad_fn is not None


def test_fused_kernel_runs_and_agrees_with_the_decomposition(device, ember_backend):
    from ember.testing.helpers import backend_for
    kernel = backend_for(device).kernels.get("rms_norm")
    if ember_backend in ("cpu_numpy", "opencl"):
        assert kernel is not None and kernel.__module__.startswith("ember_rmsnorm.")
    x = ember.randn(6, 33, device=device)[:, 1:]  # not contiguous
    w = ember.randn(32, device=device)
    decomposed = ember.ops.OPS["rms_norm"].decomposition(x, w, 1, 1e-6)
    assert_close(ember.rms_norm(x, (32,), w, 1e-6), decomposed, rtol=1e-5, atol=1e-6)


def test_bad_arguments_are_refused_naming_shapes_dtypes_and_devices(device):
    x = ember.randn(2, 3, device=device)
    with pytest.raises(RuntimeError, match=r"rms_norm: Given normalized_shape=\[4\], expected input with shape "
                                           r"\[\*, 4\], but got input of size\[2, 3\] \(float32\[2, 3\] on "):
        ember.rms_norm(x, (4,))
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as normalized_shape, but got weight "
                                           r"of shape \[4\] and normalized_shape = \[3\]"):
        ember.rms_norm(x, (3,), ember.ones(4, device=device))
    with pytest.raises(RuntimeError, match="at least 1-dimensional"):
        ember.rms_norm(x, ())
    with pytest.raises(ValueError, match=r"at least 3 dimensions for normalized_shape=\[2, 3, 4\], but got input "
                                         r"float32\[2, 3\]"):
        ember.rms_norm(x, (2, 3, 4))
    with pytest.raises(NotImplementedError, match="\"rms_norm\" not implemented for 'int64'.*int64\\[2, 3\\]"):
        ember.rms_norm(ember.ones(2, 3, dtype=ember.int64, device=device), (3,))
    with pytest.raises(TypeError, match="normalized_shape' must be an int or a sequence of ints, got str"):
        ember.rms_norm(x, "3")
    with pytest.raises(TypeError, match="argument 'input' .* must be Tensor, not list"):
        ember.rms_norm([1.0, 2.0], (2,))
    with pytest.raises(TypeError, match="argument 'weight' must be Tensor or None, not list"):
        ember.rms_norm(x, (3,), [1.0, 1.0, 1.0])
    with pytest.raises(TypeError, match="argument 'eps' must be a float or None, not str"):
        ember.rms_norm(x, (3,), None, "1e-5")


@pytest.mark.ember_requires(cpu=True, accelerator=True)
def test_weight_on_another_device_is_refused(device):
    with pytest.raises(RuntimeError,
                       match=rf"found at least two devices, {device} and cpu!.*weight float32\[3\] on cpu"):
        ember.rms_norm(ember.randn(2, 3, device=device), (3,), ember.ones(3))


def test_decomposition_carries_a_backend_without_the_kernel(primitives_device, monkeypatch):
    op = ember.ops.OPS["rms_norm"]
    calls = []
    real = op.decomposition
    monkeypatch.setattr(op, "decomposition", lambda *a: calls.append(1) or real(*a))
    check_op(lambda x, w: ember.rms_norm(x, (6,), w, 1e-5), lambda x, w: ref(x, w, 1, 1e-5), [(4, 6), (6,)],
             device=primitives_device, dtypes=DTYPES, name="rms_norm")
    from ember.testing.helpers import backend_for
    assert "rms_norm" not in backend_for(primitives_device).kernels and calls
    check_grad(lambda x, w: ember.rms_norm(x, (2, 3), w), [(4, 2, 3), (2, 3)], device=primitives_device,
               name="rms_norm")
    x = ember.randn(3, 4, dtype=ember.float64, device=primitives_device, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda a: ember.rms_norm(a, (4,)), (x,))
