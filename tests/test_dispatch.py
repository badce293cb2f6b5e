"""Dispatch: kernel, else decomposition, else opt-in cpu fallback, else a clear error."""
import warnings

import pytest

import ember
from ember.ops import dispatch, register_op
from ember.ops.registry import OPS


@pytest.fixture
def temp_op():
    created = []

    def make(name, **kw):
        op = register_op(name, **kw)
        created.append(name)
        return op
    yield make
    for n in created:
        OPS.pop(n, None)


def test_missing_kernel_without_decomposition_is_not_implemented(temp_op, prim_backend):
    op = temp_op("_test_only_cpu", differentiable=False)
    cpu = ember._devices.cpu()
    cpu._backend.register_kernel("_test_only_cpu", lambda x: x * 2)
    try:
        x = ember.ones(2, device="prim")
        with pytest.raises(NotImplementedError) as e:
            dispatch(op, x.device, (x,), (x,))
        msg = str(e.value)
        assert "_test_only_cpu" in msg and "'primitives'" in msg and "EMBER_CPU_FALLBACK=1" in msg
        assert "ember_register_kernels" in msg
    finally:
        cpu._backend.kernels.pop("_test_only_cpu")


def test_cpu_fallback_is_opt_in_and_warns_once(temp_op, prim_backend, monkeypatch):
    op = temp_op("_test_fallback", differentiable=False)
    cpu = ember._devices.cpu()
    cpu._backend.register_kernel("_test_fallback", lambda x: ember.ops.add(x, 1))
    monkeypatch.setenv("EMBER_CPU_FALLBACK", "1")
    try:
        x = ember.ones(2, device="prim")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = dispatch(op, x.device, (x,), (x,))
            dispatch(op, x.device, (x,), (x,))
        assert r.device.type == "prim" and r.tolist() == [2.0, 2.0]
        assert sum("EMBER_CPU_FALLBACK" in str(m.message) for m in w) == 1
    finally:
        cpu._backend.kernels.pop("_test_fallback")


def test_kernel_preferred_over_decomposition(temp_op):
    calls = []
    op = temp_op("_test_both", decomposition=lambda x: (calls.append("decomp"), x + 1)[1], differentiable=False)
    cpu = ember._devices.cpu()
    x = ember.zeros(1)
    assert dispatch(op, cpu, (x,), (x,)).tolist() == [1.0] and calls == ["decomp"]
    cpu._backend.register_kernel("_test_both", lambda x: (calls.append("kernel"), x + 2)[1])
    try:
        assert dispatch(op, cpu, (x,), (x,)).tolist() == [2.0] and calls[-1] == "kernel"
    finally:
        cpu._backend.kernels.pop("_test_both")


def test_op_without_backward_is_differentiated_through_its_decomposition(temp_op):
    op = temp_op("_test_cube", decomposition=lambda x: x * x * x)
    x = ember.tensor([2.0], requires_grad=True)
    y = dispatch(op, x.device, (x,), (x,))
    y.backward()
    assert x.grad.tolist() == [12.0]
    assert y.grad_fn.name() == "MulBackward0"  # recorded through its parts


def test_op_with_backward_records_one_node(temp_op):
    op = temp_op("_test_double", decomposition=lambda x: x * 2, backward=lambda ctx, g: (g * 2,))
    x = ember.tensor([1.0, 3.0], requires_grad=True)
    y = dispatch(op, x.device, (x,), (x,))
    assert y.grad_fn.name() == "TestDoubleBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "AccumulateGrad"
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_errors_name_op_shapes_dtypes():
    with pytest.raises(RuntimeError, match=r"add: The size of tensor a \(3\) must match the size of tensor b \(4\)"):
        ember.ones(3) + ember.ones(4)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        ember.ones(2, 3) @ ember.ones(4, 5)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        ember.ones(2, 2) @ ember.ones(2, 2, dtype=ember.float64)
    with pytest.raises(TypeError, match="argument 'input'"):
        ember.exp([1.0])
    with pytest.raises(IndexError, match="out of bounds for dimension 1 with size 4"):
        ember.gather(ember.ones(3, 4), 1, ember.tensor([[4]]))
    with pytest.raises(IndexError, match="out of bounds"):
        ember.ones(3).index_select(0, ember.tensor([-1]))
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        ember.ones(3)[ember.tensor([3])]
    assert ember.arange(3)[ember.tensor([-1])].tolist() == [2]  # negative advanced indices wrap, as in PyTorch
    with pytest.raises(IndexError, match="out of bounds"):
        ember.scatter_add(ember.zeros(3), 0, ember.tensor([5]), ember.ones(1))


def test_out_argument():
    out = ember.empty(3)
    r = ember.add(ember.ones(3), 1, out=out)
    assert r is out and out.tolist() == [2.0, 2.0, 2.0]
    o2 = ember.empty(0)
    ember.mul(ember.ones(2, 2), 3, out=o2)
    assert o2.shape == (2, 2)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        ember.add(ember.ones(2), 1.5, out=ember.empty(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.exp(ember.ones(2, requires_grad=True), out=ember.empty(2))


def test_missing_primitive_kernel_names_backend_and_contract():
    from ember.backend import Backend

    class Toy(Backend):
        KERNELS = {}
    be = Toy()
    be.name, be.device_type = "toy", "toydev"
    with pytest.raises(NotImplementedError, match="fill_: backend 'toy' .* ember.ops.primitives"):
        be.kernels["fill_"]
    assert be.kernels.get("fill_") is None
