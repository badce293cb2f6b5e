"""Tier 4e, semantics: result dtypes (PyTorch's promotion rules, python scalars and 0-d tensors
included), integer overflow and division by zero, empty and 0-d tensors, NaN, named-tuple results
and the errors bad input raises."""
import math

import numpy as np
import pytest

import ember

f16, bf16, f32, f64 = ember.float16, ember.bfloat16, ember.float32, ember.float64
i8, u8, i16, i32, i64, b = ember.int8, ember.uint8, ember.int16, ember.int32, ember.int64, ember.bool


def _z(device, dtype, shape=(2,)):
    return ember.ones(shape, dtype=dtype, device=device)


PROMOTION = [
    (i8, u8, i16), (i32, i64, i64), (u8, i64, i64), (b, i8, i8), (f16, i64, f16), (bf16, f16, f32), (f32, f64, f64),
    (b, b, b), (u8, b, u8), (i16, f16, f16), (bf16, i32, bf16),
]


@pytest.mark.parametrize("a,bb,r", PROMOTION, ids=[f"{a.name}+{bb.name}" for a, bb, r in PROMOTION])
def test_tensor_tensor_promotion(device, a, bb, r):
    assert (_z(device, a) + _z(device, bb)).dtype is r
    assert ember.result_type(_z(device, a), _z(device, bb)) is r


def test_scalar_and_zero_dim_promotion(device):
    assert (_z(device, i64) + 2.5).dtype is f32  # the default float dtype
    assert (2.5 * _z(device, f16)).dtype is f16
    assert (_z(device, i8) + 3).dtype is i8  # a python int keeps the tensor's integer dtype
    assert (_z(device, b) + True).dtype is b
    assert (_z(device, b) + 1).dtype is i64
    assert (ember.tensor(2.0, dtype=f64, device=device) * _z(device, f32)).dtype is f32  # 0-d takes part by category
    assert (ember.tensor(2, device=device) + _z(device, i8)).dtype is i8
    assert (ember.tensor(2.5, device=device) + _z(device, i8)).dtype is f32


def test_op_result_dtypes(device):
    i = _z(device, i32, (3,))
    assert (i / i).dtype is f32 and (i // i).dtype is i32 and (i % i).dtype is i32
    assert (i < i).dtype is b and ember.isclose(i, i).dtype is b
    assert ember.sum(_z(device, i8)).dtype is i64 and ember.sum(_z(device, b)).dtype is i64
    assert ember.prod(_z(device, i32)).dtype is i64 and ember.cumsum(_z(device, i8), 0).dtype is i64
    assert ember.sum(_z(device, i8), dtype=i8).dtype is i8
    assert ember.argmax(_z(device, f32)).dtype is i64 and ember.max(_z(device, f32, (2, 2)), 1).indices.dtype is i64
    assert (ember.abs(_z(device, i8)).dtype is i8 and ember.exp(i).dtype is f32
            and ember.sqrt(_z(device, b)).dtype is f32)
    assert ember.where(_z(device, b), _z(device, i64), 2.5).dtype is f32
    assert ember.clamp(i, 0.5).dtype is f32 and ember.clamp(i, 0, 2).dtype is i32
    assert ember.square(_z(device, b)).dtype is i64 and ember.pow(i, 2).dtype is i32
    assert ember.all(_z(device, u8)).dtype is u8 and ember.any(_z(device, f32)).dtype is b
    assert ember.mean(_z(device, f16)).dtype is f16 and ember.nonzero(i).dtype is i64
    with pytest.raises(RuntimeError, match="mean"):
        ember.mean(i)


def test_integer_overflow_wraps_as_in_c(device):
    a = ember.tensor([120, -120], dtype=i8, device=device)
    assert (a + ember.tensor([10, -10], dtype=i8, device=device)).tolist() == [-126, 126]
    assert (ember.tensor([1, 2], dtype=u8, device=device) - ember.tensor([2, 3], dtype=u8, device=device)).tolist() == \
        [255, 255]
    assert (ember.tensor([2 ** 62], device=device) * 4).tolist() == [0]
    assert (ember.tensor([100], dtype=i8, device=device) * 2).tolist() == [-56]


def test_python_scalars_out_of_the_dtype_range_are_refused(device):
    """PyTorch wraps them silently (uint8 x + 300 adds 44); ember refuses."""
    with pytest.raises(RuntimeError, match="overflow"):
        ember.tensor([1], dtype=u8, device=device) + 300
    with pytest.raises(RuntimeError, match="overflow"):
        ember.tensor([1], dtype=i8, device=device) * -1000
    with pytest.raises(RuntimeError, match="overflow"):
        ember.tensor([1], device=device) + 2 ** 63  # int64's range too
    # the values fills write, as PyTorch refuses them (not the array library's own error)
    for fill in (lambda: ember.zeros(2, dtype=i8, device=device).fill_(300),
                 lambda: ember.full((2,), -2 ** 63 - 1, dtype=i64, device=device),
                 lambda: ember.zeros(2, dtype=u8, device=device).fill_(1e30),
                 lambda: ember.zeros(3, dtype=i8, device=device).masked_fill(ember.tensor([True, False, True],
                                                                                        device=device), 128)):
        with pytest.raises(RuntimeError, match="overflow"):
            fill()
    assert ember.zeros(2, dtype=i8, device=device).fill_(-127.7).tolist() == [-127, -127]  # truncates, in range
    with pytest.raises(RuntimeError, match="overflow"):  # PyTorch compares the float itself: below -128
        ember.zeros(2, dtype=i8, device=device).fill_(-128.7)
    # a bound beyond the dtype's range clamps nothing (PyTorch would wrap -1 to 255 for uint8)
    assert ember.clamp(ember.tensor([1, 5], dtype=u8, device=device), -1, 3).tolist() == [1, 3]


def test_integer_division_by_zero(device):
    i = ember.tensor([1, 2], device=device)
    z = ember.tensor([0, 1], device=device)
    for call in (lambda: i // z, lambda: i % 0, lambda: ember.div(i, z, rounding_mode="trunc"),
                 lambda: ember.fmod(i, 0), lambda: ember.remainder(i, z)):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            call()
            if ember.backend.backend_for(device.type).deferred_errors:  # raised at the next synchronisation
                ember.backend.backend_for(device.type).synchronize(device)
    f = ember.tensor([1.0, -1.0, 0.0], device=device)
    r = (f / 0.0).tolist()
    assert r[0] == math.inf and r[1] == -math.inf and math.isnan(r[2])
    assert (i / z).tolist()[0] == math.inf  # true division of integers is float division


def test_empty_tensors(device):
    e = ember.zeros(0, 3, device=device)
    assert ember.sum(e).item() == 0.0 and ember.prod(e).item() == 1.0 and math.isnan(ember.mean(e).item())
    assert ember.sum(e, 0).tolist() == [0.0] * 3 and ember.sum(e, 1).shape == (0,)
    assert ember.amax(e, 1).shape == (0,)
    with pytest.raises(IndexError, match="non-zero size"):
        ember.amax(e, 0)
    with pytest.raises(RuntimeError, match="numel"):
        ember.amax(e)
    with pytest.raises(IndexError):
        ember.argmax(e)
    assert ember.cumsum(e, 0).shape == (0, 3) and ember.sort(e, 0).values.shape == (0, 3)
    assert ember.nonzero(e).shape == (0, 2) and ember.unique(e).shape == (0,)
    assert ember.matmul(ember.ones(2, 0, device=device), ember.ones(0, 3, device=device)).tolist() == [[0.0] * 3] * 2
    assert ember.cat([e, ember.ones(1, 3, device=device)]).shape == (1, 3)
    assert (e + ember.ones(3, device=device)).shape == (0, 3) and ember.exp(e).shape == (0, 3)
    assert ember.logsumexp(e, 0).tolist() == [-math.inf] * 3 and ember.all(e).item() and not ember.any(e).item()
    assert ember.median(e, 1).values.shape == (0,) and ember.cummax(e, 1).values.shape == (0, 3)


def test_zero_dim_tensors(device):
    s = ember.tensor(2.5, device=device)
    for f in (ember.sum, ember.mean, ember.amax, ember.amin, ember.prod, ember.logsumexp):
        assert f(s, 0).shape == () and f(s, -1, True).shape == () and f(s, 0).item() == pytest.approx(2.5)
    assert ember.argmax(s).item() == 0 and ember.argmax(s, 0).item() == 0
    assert ember.max(s, 0).values.item() == 2.5 and ember.sort(s).values.item() == 2.5
    assert ember.topk(s, 1).values.item() == 2.5 and ember.cumsum(s, 0).item() == 2.5
    assert ember.gather(s, 0, ember.tensor(0, device=device)).item() == 2.5
    assert (s + ember.ones(2, device=device)).shape == (2,) and s.reshape(1).shape == (1,)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.sum(s, 1)


def test_nan(device):
    x = ember.tensor([1.0, float("nan"), 3.0], device=device)
    assert math.isnan(ember.max(x).item()) and math.isnan(ember.amin(x).item())
    assert math.isnan(ember.maximum(x, ember.zeros(3, device=device))[1].item())
    assert ember.fmax(x, ember.zeros(3, device=device)).tolist() == [1.0, 0.0, 3.0]
    assert ember.argmax(x).item() == 1  # the NaN, as PyTorch
    v = ember.sort(x).values.tolist()
    assert v[:2] == [1.0, 3.0] and math.isnan(v[2])  # NaN sorts last ...
    assert math.isnan(ember.sort(x, descending=True).values[0].item())  # ... and first when descending
    assert math.isnan(ember.median(x).item()) and ember.nanmedian(x).item() == 1.0
    assert math.isnan(ember.clamp(x, 0, 2)[1].item())
    assert math.isnan(ember.sign(x)[1].item())  # PyTorch returns 0 here, hiding the NaN; ember keeps it
    assert ember.nansum(x).item() == 4.0 and ember.nanmean(x).item() == 2.0
    assert ember.isclose(x, x).tolist() == [True, False, True] and ember.isclose(x, x, equal_nan=True).all().item()


def test_signed_zero(device):
    z = ember.tensor([-0.0, 0.0], device=device)
    assert ember.signbit(z).tolist() == [True, False]
    assert ember.copysign(ember.ones(2, device=device), z).tolist() == [-1.0, 1.0]


def test_named_tuple_results(device):
    x = ember.tensor([[3.0, 1.0, 2.0]], device=device)
    for r, fields in ((ember.max(x, 1), ("values", "indices")), (ember.min(x, 1), ("values", "indices")),
                      (ember.sort(x), ("values", "indices")), (ember.topk(x, 2), ("values", "indices")),
                      (ember.kthvalue(x, 2), ("values", "indices")), (ember.median(x, 1), ("values", "indices")),
                      (ember.mode(x, 1), ("values", "indices")), (ember.cummax(x, 1), ("values", "indices")),
                      (ember.aminmax(x), ("min", "max"))):
        assert r._fields == fields
        assert tuple(r) == tuple(getattr(r, f) for f in fields)
    v, i = ember.max(x, 1)
    assert v.tolist() == [3.0] and i.tolist() == [0]


def test_bad_input_errors_name_the_op_and_shapes(device):
    a, c = ember.ones(2, 3, device=device), ember.ones(4, 5, device=device)
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of tensor b \(5\)"):
        a + c
    with pytest.raises(RuntimeError, match=r"cannot be multiplied \(2x3 and 4x5\)"):
        a @ c
    with pytest.raises(RuntimeError, match="Subtraction"):
        ember.ones(2, dtype=b, device=device) - ember.ones(2, dtype=b, device=device)
    with pytest.raises(RuntimeError, match="negative integer powers"):
        ember.tensor([2], device=device) ** -1
    with pytest.raises(RuntimeError, match="bitwise_and"):  # NotImplementedError, a RuntimeError, as PyTorch
        a & a
    with pytest.raises(TypeError):
        ~a
    with pytest.raises(TypeError):
        a @ 2
    with pytest.raises(RuntimeError, match="rounding_mode"):
        ember.div(a, a, rounding_mode="round")
    with pytest.raises(IndexError, match="Dimension out of range"):
        a.sum(2)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        a.sum((1, -1))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        ember.flip(a, (0, 0))
    with pytest.raises(RuntimeError, match="Sizes of tensors must match"):
        ember.cat([a, c])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        ember.stack([a, c])


def test_integer_power_of_negative_exponent_tensors(device):
    """As PyTorch: x ** -n for integers is 1 / x ** n truncated."""
    base = ember.tensor([2, -1, -1, 1, 0, 3], device=device)
    exp = ember.tensor([-1, -1, -2, -5, 2, 2], device=device)
    assert (base ** exp).tolist() == [0, -1, 1, 1, 0, 9]
    assert np.array_equal((2 ** ember.tensor([3, 0], device=device)).numpy(force=True), [8, 1])
