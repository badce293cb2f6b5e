"""ember.compile's elementwise fusion on cuda (:mod:`ember_cuda_cupy.fusion`), on the fake cupy:
the generated CUDA C expression, the literals' bit patterns, and the plumbing of a compiled
program through the fused kernel (the fake cupy runs a numpy twin in place of the CUDA C; the
CUDA C itself is compiled and compared with eager by gpu_tests/ on a GPU)."""
import numpy as np
import pytest

import ember
from ember.backend.fusion import ElementwiseChain
from ember_cuda_cupy import fusion


def _chain(ops, n_inputs=2, dtype=ember.float32):
    return ElementwiseChain(ops, [((4, 5), dtype)] * n_inputs, (4, 5), dtype, ember.device("cuda:0"))


def test_expression_substitutes_each_op_into_the_next():
    ops = [("mul", (("in", 0), ("in", 1))), ("add", (("op", 0), 0.5)), ("tanh", (("op", 1),)),
           ("sub", (("op", 2), ("in", 1)))]
    expr = fusion.expression(_chain(ops))
    assert expr == "(tanhf(((((float)x0) * ((float)x1)) + __int_as_float(0x3f000000))) - ((float)x1))"


def test_literals_are_the_rounded_value_bit_for_bit():
    assert fusion._literal(0.1, np.float32) == "__int_as_float(0x3dcccccd)"   # float32(0.1)
    assert fusion._literal(0.1, np.float16) == "__int_as_float(0x3dccc000)"   # float16(0.1), widened
    assert fusion._literal(float("inf"), np.float32) == "__int_as_float(0x7f800000)"


def test_nan_aware_helpers_and_declines():
    assert "x != x" in fusion.PREAMBLE and "fmaxf" not in fusion.PREAMBLE
    ops = [("maximum", (("in", 0), ("in", 1))), ("relu", (("op", 0),))]
    assert fusion.expression(_chain(ops)) == "_ember_relu(_ember_max(((float)x0), ((float)x1)))"
    assert fusion.expression(_chain([("erf", (("in", 0),))], 1)) is None
    be = ember.backend.backend_for("cuda")
    assert be.fuse_elementwise(_chain([("exp", (("in", 0),))], 1, ember.float64)) is None  # float64: never
    assert be.fuse_elementwise(_chain([("exp", (("in", 0),))], 1, ember.bfloat16)) is None


def test_a_compiled_chain_runs_as_one_kernel():
    import cupy

    def f(x, y):
        for _ in range(3):
            x = ember.tanh(x * y + 0.5) - y
        return x

    def twin(*arrays):  # what the generated CUDA C computes, for the fake cupy
        x, y = arrays
        for _ in range(3):
            x = cupy.tanh(x * y + np.float32(0.5)) - y
        return x

    name = "ember_fused_" + "_".join(["mul", "add", "tanh", "sub"] * 3)
    cupy.TWINS[name] = twin
    try:
        g = ember.Generator(device="cuda:0").manual_seed(0)
        x = ember.randn(64, 300, device="cuda:0", generator=g)
        y = ember.randn(64, 300, device="cuda:0", generator=g)
        cf = ember.compile(f)
        cf(x, y)
        prog = cf.programs()[0]
        assert prog.n_fused == 1 and prog.n_kernels == 1, prog.source
        r = cf(x, y)
        assert r.device == x.device and r.dtype == ember.float32 and r.shape == (64, 300)
        assert ember.allclose(r, f(x, y), rtol=1e-6, atol=1e-6)
    finally:
        del cupy.TWINS[name]


@pytest.mark.parametrize("dev", ["cuda:1"])
def test_the_kernel_runs_on_its_tensors_device(dev):
    import cupy
    seen = []

    def twin(x):
        seen.append(cupy.cuda.runtime.getDevice())
        return cupy.exp(-x)

    cupy.TWINS["ember_fused_neg_exp"] = twin
    try:
        x = ember.arange(4.0, device=dev)
        chain = ElementwiseChain([("neg", (("in", 0),)), ("exp", (("op", 0),))], [((4,), ember.float32)], (4,),
                                 ember.float32, x.device)
        fused = ember.backend.backend_for("cuda").fuse_elementwise(chain)
        r = fused(x)
        assert seen == [1] and r.device == x.device
        assert ember.allclose(r, ember.exp(-x))
    finally:
        del cupy.TWINS["ember_fused_neg_exp"]
