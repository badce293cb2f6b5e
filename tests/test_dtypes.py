"""dtypes and PyTorch's promotion rules, python scalars and 0-d tensors included."""
import pytest

import ember
from ember import _dtype as D

E = ember


@pytest.mark.parametrize("a,b,expected", [
    (E.bool, E.bool, E.bool), (E.bool, E.uint8, E.uint8), (E.uint8, E.int8, E.int16), (E.uint8, E.int16, E.int16),
    (E.int8, E.int64, E.int64), (E.int32, E.float16, E.float16), (E.float16, E.bfloat16, E.float32),
    (E.bfloat16, E.float32, E.float32), (E.float32, E.float64, E.float64), (E.int64, E.float32, E.float32),
    (E.bool, E.float16, E.float16),
])
def test_promote_types_table(a, b, expected):
    assert E.promote_types(a, b) is expected
    assert E.promote_types(b, a) is expected


def test_python_scalars_are_weak():
    i32 = E.ones(2, dtype=E.int32)
    assert (i32 + 1).dtype is E.int32
    assert (i32 + 1.5).dtype is E.float32          # default float dtype, not float64
    assert (E.ones(2, dtype=E.float16) * 2.0).dtype is E.float16
    assert (E.ones(2, dtype=E.bool) + 1).dtype is E.int64
    assert (E.ones(2, dtype=E.bool) & True).dtype is E.bool


def test_zero_dim_tensors_participate_by_category():
    f32 = E.ones(3)
    assert (f32 + E.tensor(1.0, dtype=E.float64)).dtype is E.float32
    assert (E.ones(3, dtype=E.int32) + E.tensor(1.5, dtype=E.float64)).dtype is E.float64
    assert (E.ones(3, dtype=E.int32) + E.tensor(7)).dtype is E.int32
    assert (E.tensor(1) + 2.5).dtype is E.float32
    assert E.result_type(E.tensor(1, dtype=E.int8), 300) is E.int8


def test_default_dtype():
    assert E.get_default_dtype() is E.float32
    try:
        E.set_default_dtype(E.float64)
        assert E.tensor([1.5]).dtype is E.float64
        assert (E.ones(2, dtype=E.int64) / 2).dtype is E.float64
        assert E.zeros(2).dtype is E.float64
    finally:
        E.set_default_dtype(E.float32)
    with pytest.raises(TypeError):
        E.set_default_dtype(E.int32)


def test_true_division_and_comparisons():
    a = E.tensor([1, 2, 3])
    assert (a / 2).dtype is E.float32 and (a / 2).tolist() == [0.5, 1.0, 1.5]
    assert (a // 2).tolist() == [0, 1, 1] and (a // 2).dtype is E.int64
    assert (a > 1).dtype is E.bool
    assert (E.tensor([-7]) // 2).tolist() == [-4]
    assert E.div(E.tensor([-7]), 2, rounding_mode="trunc").tolist() == [-3]


def test_inplace_refuses_lossy_cast():
    x = E.ones(2, dtype=E.int64)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        x.add_(1.5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.exp_()
    y = E.ones(2)
    y.add_(E.ones(2, dtype=E.float64))  # float64 -> float32 is allowed in place
    assert y.dtype is E.float32 and y.tolist() == [2.0, 2.0]


def test_dtype_objects():
    assert E.float32.is_floating_point and not E.int64.is_floating_point
    assert E.float is E.float32 and E.double is E.float64 and E.long is E.int64 and E.half is E.float16
    assert E.float32.itemsize == 4 and E.bfloat16.itemsize == 2
    assert repr(E.bfloat16) == "ember.bfloat16"
    assert E.iinfo(E.int8).max == 127 and E.finfo(E.float16).max == 65504.0
    assert D.to_dtype("torch.float64") is E.float64
    import pickle
    assert pickle.loads(pickle.dumps(E.int16)) is E.int16


def test_bitwise_refuses_floats():
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        E.ones(2) & E.ones(2)


def test_bool_arithmetic_errors_like_pytorch():
    b = E.tensor([True, False])
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors"):
        b - b
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        -b
    assert (~b).tolist() == [False, True]
