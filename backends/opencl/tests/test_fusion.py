"""ember.compile's fusion hook on opencl: one generated kernel per elementwise chain, equal to the
op-by-op kernels within the dtype's rounding, on contiguous, broadcast and strided inputs."""
import numpy as np
import pytest

import ember
from ember.backend.fusion import ElementwiseChain
from ember_opencl import fusion


def _chain_fn(x, y):
    for _ in range(2):
        x = ember.tanh(x * y + 0.5) - y
    return ember.maximum(ember.relu(x).sigmoid(), y) / 3


@pytest.mark.parametrize("dtype,tol", [(ember.float32, 2e-6), (ember.float16, 2e-3)])
def test_chain_is_one_kernel_and_matches_op_by_op(dev, dtype, tol):
    cf = ember.compile(_chain_fn)
    for make_y in (lambda: ember.randn(16, 40, device=dev, dtype=dtype),
                   lambda: ember.randn(40, 16, device=dev, dtype=dtype).t(),   # strided
                   lambda: ember.randn(40, device=dev, dtype=dtype)):          # broadcast
        x, y = ember.randn(16, 40, device=dev, dtype=dtype), make_y()
        cf(x, y)
        got, exp = cf(x, y), _chain_fn(x, y)
        assert got.dtype is dtype and got.shape == exp.shape
        np.testing.assert_allclose(got.float().numpy(force=True), exp.float().numpy(force=True), rtol=tol, atol=tol)
    assert all(p.n_fused == 1 and p.n_kernels == 1 for p in cf.programs())


def test_float64_chains_are_not_offered(dev, backend):
    if not backend.supports_dtype(ember.float64):
        pytest.skip("this OpenCL device has no float64")
    cf = ember.compile(_chain_fn)
    x, y = ember.randn(4, 5, device=dev, dtype=ember.float64), ember.randn(4, 5, device=dev, dtype=ember.float64)
    cf(x, y)
    assert ember.equal(cf(x, y), _chain_fn(x, y)) and cf.programs()[0].n_fused == 0


def test_expression_substitutes_operands_and_exact_literals():
    ch = ElementwiseChain([("mul", (("in", 0), 0.1)), ("sub", (2, ("op", 0))), ("maximum", (("op", 1), ("in", 1)))],
                          [((3,), ember.float32), ((3,), ember.float32)], (3,), ember.float32, None)
    expr, vexpr, _ = fusion.expressions(ch)
    lit = f"((float){0.1.hex()})"
    assert expr.startswith("(((") and lit in expr and "isnan(((" in expr
    assert "select(b" in vexpr and "(({vt})" in vexpr


def test_too_many_inputs_or_unknown_ops_are_declined():
    ch = ElementwiseChain([("add", (("in", 0), ("in", 7)))], [((2,), ember.float32)] * 8, (2,), ember.float32, None)
    assert fusion.fuse_elementwise(ch) is None
    ch = ElementwiseChain([("gelu", (("in", 0),))], [((2,), ember.float32)], (2,), ember.float32, None)
    assert fusion.fuse_elementwise(ch) is None


def test_compiled_rnn_gradients_reach_weights_met_only_through_views(dev):
    # opencl runs the RNN layer by its decomposition, which takes weight_hh.t() without grad; the
    # compiled node must still send the gradient to weight_hh
    ember.manual_seed(0)
    m = ember.nn.GRU(3, 4, device=dev)
    cm = ember.compile(m)
    x = ember.randn(5, 2, 3, device=dev)
    params = list(m.parameters())
    exp = ember.autograd.grad(m(x)[0].sum(), params)
    cm(x)
    got = ember.autograd.grad(cm(x)[0].sum(), params)
    for a, b in zip(got, exp):
        np.testing.assert_allclose(a.numpy(force=True), b.numpy(force=True), rtol=1e-5, atol=1e-6)
