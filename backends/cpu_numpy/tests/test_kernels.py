"""ember-cpu-numpy's kernel library: the table it builds, that it is written over its array
namespace (not numpy directly), and the convolution backward that computes its gradients
together. The conformance suite (``pytest --pyargs ember.testing.suite --ember-backend
cpu_numpy``) checks every kernel's values; these tests check what is particular to this backend."""
import inspect

import numpy as np
import pytest

import ember
import ember.backend
import ember.nn.functional as F
from ember.ops import OPS
from ember.ops.primitives import PRIMITIVES
from ember_cpu_numpy import arrays, kernels
from ember_cpu_numpy.backend import NumpyBackend
from ember_cpu_numpy.kernels import convolution


def _be():
    return ember.backend.backend_for("cpu")


def test_the_table_covers_the_primitives_and_the_library_groups():
    table = NumpyBackend.KERNELS
    assert set(PRIMITIVES) <= set(table)
    for group in kernels.GROUPS:
        assert set(group(kernels.numpy_namespace()).table()) <= set(table)
    assert {"convolution_backward", "lstm_layer", "_fused_adam_"} <= set(table)
    assert kernels.OUT_KERNELS <= set(table)
    for name, k in table.items():  # every kernel is named after an op and takes its arguments
        assert name in OPS, name
        assert all(p.kind is not p.VAR_POSITIONAL for p in inspect.signature(k).parameters.values()), name


class _Proxy:
    """numpy, counting the attributes the kernels ask it for."""

    def __init__(self):
        self.asked = set()

    def __getattr__(self, name):
        self.asked.add(name)
        return getattr(np, name)


def test_the_library_computes_through_its_namespace():
    xp = _Proxy()
    t = kernels.build_table(kernels.ArrayNamespace(xp, arrays.nd, arrays.wrap))
    a = ember.arange(6.0).reshape(2, 3)
    assert t["add"](a, a).tolist() == [[0, 2, 4], [6, 8, 10]]
    assert t["sum"](a, (1,), False).tolist() == [3.0, 12.0]
    x, w = ember.randn(2, 3, 6, 6), ember.randn(4, 3, 3, 3)
    np.testing.assert_allclose(t["convolution"](x, w, None, (1, 1), (1, 1), (1, 1), 1).numpy(),
                               F.conv2d(x, w, padding=1).numpy(), rtol=1e-5, atol=1e-5)
    assert {"add", "sum", "matmul", "lib"} <= xp.asked


# -- convolution_backward -----------------------------------------------------------------------------------

CASES = {  # x shape, w shape, stride, padding, dilation, groups
    "batch-last": ((4, 3, 8, 8), (5, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    "x wide, g narrow": ((2, 4, 20, 20), (6, 4, 3, 3), (2, 2), (1, 1), (1, 1), 1),
    "x narrow, g wide": ((3, 2, 16, 16), (4, 2, 1, 1), (1, 1), (2, 2), (1, 1), 1),
    "groups, dilation": ((2, 4, 9, 9), (6, 2, 3, 3), (1, 1), (0, 0), (2, 2), 2),
    "one sample": ((1, 3, 7, 7), (2, 3, 3, 3), (2, 2), (1, 1), (1, 1), 1),
    "1-d": ((3, 2, 11), (4, 2, 3), (2,), (1,), (1,), 1),
    "3-d": ((2, 2, 4, 5, 6), (3, 2, 2, 2, 2), (1, 1, 1), (1, 0, 1), (1, 1, 1), 1),
}
MASKS = [(True, True, True), (True, False, False), (False, True, False), (False, False, True), (False, True, True)]


def _conv_inputs(case, dtype, seed=0):
    xs, ws, stride, padding, dilation, groups = CASES[case]
    g = ember.Generator().manual_seed(seed)
    x = ember.randn(*xs, generator=g, dtype=ember.float64)
    w = ember.randn(*ws, generator=g, dtype=ember.float64)
    y = _be().kernels["convolution"](x, w, None, stride, padding, dilation, groups)
    gy = ember.randn(*y.shape, generator=g, dtype=ember.float64)
    return x.to(dtype), w.to(dtype), gy.to(dtype), (stride, padding, dilation, groups)


def _reference(g, x, w, geometry, mask):
    """The op's decomposition: conv_transpose, conv_weight_grad and a sum, one at a time."""
    with ember.no_grad():
        return OPS["convolution_backward"].decomposition(g, x, w, *geometry, mask)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mask", MASKS, ids=lambda m: "".join("xwb"[i] if v else "-" for i, v in enumerate(m)))
def test_convolution_backward_matches_its_decomposition(case, mask):
    x, w, g, geometry = _conv_inputs(case, ember.float64)
    got = _be().kernels["convolution_backward"](g, x, w, *geometry, mask)
    ref = _reference(g, x, w, geometry, mask)
    assert isinstance(got, tuple) and len(got) == 3
    for r, e, need in zip(got, ref, mask):
        if not need:
            assert r is None
            continue
        assert r.dtype is ember.float64 and r.shape == e.shape
        np.testing.assert_allclose(r.numpy(), e.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype,tol", [(ember.float32, 1e-4), (ember.float16, 2e-2), (ember.bfloat16, 5e-2)])
@pytest.mark.parametrize("case", ["batch-last", "groups, dilation"])
def test_convolution_backward_keeps_the_dtype(case, dtype, tol):
    x, w, g, geometry = _conv_inputs(case, dtype)
    got = _be().kernels["convolution_backward"](g, x, w, *geometry, (True, True, True))
    ref = _reference(g.double(), x.double(), w.double(), geometry, (True, True, True))
    for r, e in zip(got, ref):
        assert r.dtype is dtype
        np.testing.assert_allclose(r.double().numpy(), e.numpy(), rtol=tol, atol=tol * max(1.0, float(e.abs().max())))


def test_a_conv_backward_reuses_the_forwards_columns_only_while_the_input_is_unchanged():
    x, w, _, geometry = _conv_inputs("batch-last", ember.float32)
    w.requires_grad_()
    y = _be().kernels["convolution"](x, w, None, *geometry)  # keeps x's columns for the weight gradient
    assert id(x) in convolution._COLS_CACHE
    x.mul_(2.0)  # a new version: the kept columns are stale
    g = ember.ones(y.shape)
    gw = _be().kernels["convolution_backward"](g, x, w.detach(), *geometry, (False, True, False))[1]
    ref = _reference(g, x, w.detach(), geometry, (False, True, False))[1]
    np.testing.assert_allclose(gw.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)
    assert id(x) not in convolution._COLS_CACHE


def test_the_gradients_of_a_conv_layer_do_not_depend_on_call_order():
    """The former kernels shared g's batch-last copy through a one-entry module cache that
    assumed the core asked for the input gradient first; convolution_backward has no such state."""
    assert not hasattr(convolution, "_G_LAST")
    x, w, g, geometry = _conv_inputs("batch-last", ember.float32)
    k = _be().kernels
    op = tuple(xs - ((gs - 1) * s - 2 * p + d * (ks - 1) + 1)
               for xs, gs, ks, s, p, d in zip(x.shape[2:], g.shape[2:], w.shape[2:], *geometry[:3]))
    gw1 = k["conv_weight_grad"](x, g, w.shape, geometry[0], geometry[1], geometry[2], geometry[3])
    gx1 = k["conv_transpose"](g, w, None, geometry[0], geometry[1], op, geometry[2], geometry[3])
    gx2, gw2, _ = k["convolution_backward"](g, x, w, *geometry, (True, True, False))
    np.testing.assert_allclose(gx1.numpy(), gx2.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gw1.numpy(), gw2.numpy(), rtol=1e-5, atol=1e-5)


def test_conv_layer_training_uses_convolution_backward():
    calls = []
    be = _be()
    k = be.kernels["convolution_backward"]

    def spy(*args):
        calls.append(args[-1])
        return k(*args)
    be.kernels["convolution_backward"] = spy
    try:
        conv = ember.nn.Conv2d(3, 4, 3, padding=1)
        x = ember.randn(2, 3, 6, 6, requires_grad=True)
        conv(x).square().sum().backward()
    finally:
        be.kernels["convolution_backward"] = k
    assert calls == [(True, True, True)]
    assert x.grad.shape == x.shape and conv.weight.grad.shape == conv.weight.shape
