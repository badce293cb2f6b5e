"""The conformance suite's failure reports: every failure carries python source that rebuilds the
inputs exactly and reproduces it; and the kernels' own index checks (the last line of defence
under the front ends)."""
import numpy as np
import pytest

import ember
from ember.testing import check_op
from ember.testing.helpers import check_grad, reference_inputs, tensor_source


def _failure(fn, ref, specs, **kw):
    with pytest.raises(AssertionError) as info:
        check_op(fn, ref, specs, **kw)
    msg = str(info.value)
    assert "repro:\n" in msg
    return msg, msg.split("repro:\n", 1)[1]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "expanded"])
def test_repro_rebuilds_the_failing_inputs_and_fails_the_same_way(layout):
    msg, src = _failure(lambda x, y: ember.add(x, y) + 1e-3, np.add, [(3, 4), (3, 4)], layouts_=(layout,),
                        dtypes=(ember.float32,), name="add_off_by_a_bit")
    assert f"layout {layout}" in msg
    scope = {}
    with pytest.raises(AssertionError, match="values differ"):
        exec(src, scope)  # the printed program runs and fails the same check
    x0 = scope["x0"]
    tensors, _ = reference_inputs([(3, 4), (3, 4)], ember.float32, "cpu", layout, 0)
    assert x0.stride() == tensors[0].stride() and x0.tolist() == tensors[0].tolist()


def test_expanded_inputs_are_stride_zero():
    tensors, hosts = reference_inputs([(3, 4)], ember.float32, "cpu", "expanded", 0)
    assert tensors[0].stride() == (0, 1) and np.array_equal(hosts[0][0], hosts[0][2])


def test_repro_of_tuple_outputs_nan_and_bfloat16():
    _, src = _failure(lambda x: (ember.max(x, 1).values, ember.max(x, 1).indices + 1),
                      lambda x: (np.max(x, 1), np.argmax(x, 1)), [dict(shape=(2, 5), special=True)],
                      dtypes=(ember.bfloat16,), layouts_=("sliced",), name="max_dim")
    assert "float('nan')" in src and "ember.bfloat16" in src
    with pytest.raises(AssertionError):
        exec(src, {})


def test_repro_names_a_named_op_and_its_kwargs():
    _, src = _failure(ember.sum, lambda x, dim: np.sum(x, dim) + 1, [(2, 3)], kwargs={"dim": 1},
                      dtypes=(ember.float64,), layouts_=("contiguous",))
    assert "fn = ember.sum" in src and "dim=1" in src
    with pytest.raises(AssertionError):
        exec(src, {})


def test_repro_of_an_exception_inside_the_op():
    msg, src = _failure(lambda x: ember.gather(x, 1, ember.tensor([[7]])), lambda x: x, [(2, 3)],
                        dtypes=(ember.float32,), layouts_=("contiguous",))
    assert "IndexError" in msg or "out of bounds" in msg
    with pytest.raises(IndexError):
        exec(src, {})


def test_gradcheck_failure_has_a_gradcheck_repro():
    bad = ember.autograd.Function

    class WrongGrad(bad):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    with pytest.raises(AssertionError) as info:
        check_grad(WrongGrad.apply, [(2, 2)], name="wrong_grad")
    assert "ember.autograd.gradcheck" in str(info.value)


def test_tensor_source_of_a_view_keeps_offset_and_strides():
    base = ember.arange(20.0).reshape(4, 5)
    v = base[1:, 1::2]
    scope = {"ember": ember}
    exec(tensor_source("t", v, "cpu"), scope)
    t = scope["t"]
    assert t.tolist() == v.tolist() and t.stride() == v.stride() and t.storage_offset() == v.storage_offset()


def test_cpu_kernels_check_indices_themselves():
    """Front ends validate first; the primitive kernels check again, so a backend bug or a direct
    kernel call can never read or write outside a buffer."""
    from ember import _devices
    k = _devices.cpu()._kernels
    x = ember.zeros(3, 4)
    from ember.backend import IndexOutOfRangeError
    for bad in ([[4]], [[-1]], [[2 ** 40]]):
        idx = ember.tensor(bad)
        with pytest.raises(IndexOutOfRangeError):
            k["gather"](x, 1, idx)
        with pytest.raises(IndexOutOfRangeError):
            k["scatter_add"](x, 1, idx, ember.ones(1, 1))
        with pytest.raises(IndexOutOfRangeError):
            k["scatter"](x, 1, idx, ember.ones(1, 1))
    assert x.tolist() == [[0.0] * 4] * 3


def test_hypothesis_profile_is_deterministic_by_default(monkeypatch):
    from hypothesis import settings
    import ember.testing.suite.test_04b_hypothesis as h
    assert settings.get_profile("ember-ci").derandomize is True
    assert h._PROFILE.derandomize is True and h._PROFILE.database is None
