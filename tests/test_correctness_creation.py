"""Creation, views/shape, indexing and random-parameter corner cases against PyTorch's behaviour
(values, dtypes and exception types checked against torch 2.13 by hand; the side-by-side checks
are in tests/torch_oracle/test_creation_oracle.py)."""
import time

import numpy as np
import pytest

import ember


# -- tensor()/as_tensor() and integer overflow -------------------------------------------------

@pytest.mark.parametrize("data,dtype", [
    (300, ember.int8), ([300], ember.int8), ([[1], [300]], ember.int8), ([300.5], ember.int8),
    ([-3.6], ember.uint8), ([-0.5], ember.uint8), ([255.5], ember.uint8), ([-256], ember.uint8),
    ([127.9], ember.int8), ([-128.5], ember.int8), ([1e30], ember.int64), ([float("nan")], ember.int32),
    ([float("inf")], ember.int32), (2 ** 40, ember.int32), (np.int64(300), ember.int8),
    ([np.float64(300.0)], ember.int8), ([ember.tensor(300)], ember.int8),
])
@pytest.mark.parametrize("factory", [ember.tensor, ember.as_tensor])
def test_python_number_out_of_range_raises(factory, data, dtype):
    with pytest.raises(RuntimeError, match="cannot be converted to type .* without overflow"):
        factory(data, dtype=dtype)


def test_in_range_values_convert_as_pytorch():
    assert ember.tensor([2.9, -2.9], dtype=ember.int8).tolist() == [2, -2]
    assert ember.tensor([-1], dtype=ember.uint8).tolist() == [255]  # PyTorch takes -255..255 for uint8
    assert ember.tensor([-255], dtype=ember.uint8).tolist() == [1]
    assert ember.tensor([-0.0], dtype=ember.uint8).tolist() == [0]
    assert ember.tensor([True], dtype=ember.int8).tolist() == [1]
    assert ember.tensor([300], dtype=ember.bool).tolist() == [True]
    assert ember.tensor([1e40], dtype=ember.float32).tolist() == [float("inf")]
    assert ember.CharTensor([100]).tolist() == [100]
    with pytest.raises(RuntimeError):
        ember.CharTensor([300])


def test_numpy_arrays_cast_unchecked_as_pytorch():
    assert ember.tensor(np.array([300]), dtype=ember.int8).tolist() == [44]
    assert ember.as_tensor(np.array([300]), dtype=ember.int8).tolist() == [44]
    assert ember.tensor(np.array(300), dtype=ember.int8).item() == 44


@pytest.mark.parametrize("data", [[2 ** 63], [2 ** 64], [-2 ** 63 - 1], [1, 2 ** 63], [[1], [2 ** 63]]])
def test_python_int_past_int64_raises_value_error(data):
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        ember.tensor(data)
    with pytest.raises(ValueError):
        ember.as_tensor(data)


def test_python_int_past_int64_into_float():
    assert ember.tensor([1.5, 2 ** 63]).tolist() == [1.5, float(2 ** 63)]
    assert ember.tensor([2 ** 63], dtype=ember.float32).item() == float(2 ** 63)
    assert ember.tensor([1.5, 2 ** 64], dtype=ember.float64).tolist() == [1.5, float(2 ** 64)]


# -- scalar writes (setitem, fill_, masked_fill, index_fill) -------------------------------------

def _writes(x, v):
    m = ember.tensor([True, False, True])
    return [lambda: x.__setitem__(1, v), lambda: x.__setitem__(m, v), lambda: x.__setitem__(slice(0, 2), v),
            lambda: x.__setitem__([0, 2], v), lambda: x.fill_(v), lambda: x.masked_fill(m, v),
            lambda: x.index_fill(0, ember.tensor([1]), v)]


@pytest.mark.parametrize("dtype,v", [(ember.uint8, -3.6), (ember.uint8, 255.5), (ember.uint8, 300),
                                     (ember.int8, 300), (ember.int8, 127.5), (ember.int8, float("nan")),
                                     (ember.uint8, -256)])
def test_scalar_write_out_of_range_raises_runtime_error(dtype, v):
    for f in _writes(ember.zeros(3, dtype=dtype), v):
        with pytest.raises(RuntimeError, match="without overflow"):
            f()


def test_scalar_write_in_range_truncates():
    x = ember.zeros(3, dtype=ember.int8)
    x[1] = -3.6
    assert x.tolist() == [0, -3, 0]
    y = ember.zeros(3, dtype=ember.uint8)
    y[ember.tensor([True, False, True])] = 255.0
    assert y.tolist() == [255, 0, 255]


def test_negative_python_int_into_uint8_write_is_a_clear_error():
    # deliberate difference (docs/differences.md): a python number never wraps around
    x = ember.zeros(3, dtype=ember.uint8)
    for f in _writes(x, -1):
        with pytest.raises(RuntimeError, match="uint8 without overflow"):
            f()


# -- cat/stack ---------------------------------------------------------------------------------

def test_cat_legacy_empty_takes_part_in_promotion():
    e = ember.empty(0, dtype=ember.float64)
    assert ember.cat([ember.ones(2, 2), e]).dtype is ember.float64
    assert ember.cat([e, ember.ones(2, 2, dtype=ember.int64)]).dtype is ember.float64
    assert ember.cat([ember.ones(2, 2, dtype=ember.int32), e], dim=1).dtype is ember.float64
    assert ember.hstack([ember.ones(2, 2, dtype=ember.int32), e]).dtype is ember.float64
    with pytest.raises(RuntimeError, match="Sizes of tensors must match"):  # atleast_2d: no longer legacy
        ember.vstack([ember.ones(2, 2, dtype=ember.int32), e])
    r = ember.cat([ember.empty(0, dtype=ember.int64), ember.empty(0, dtype=ember.float16)])
    assert r.dtype is ember.float16 and r.shape == (0,)


@pytest.mark.parametrize("op", [ember.stack, ember.cat, ember.hstack, ember.vstack, ember.dstack,
                                ember.column_stack])
def test_stack_family_names_the_bad_element(op):
    with pytest.raises(TypeError, match="expected Tensor as element 0 in argument 0, but got numpy.ndarray"):
        op([np.ones(2)])
    with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 0, but got int"):
        op([ember.ones(2), 3])
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        op(ember.ones(2, 2))


def test_empty_tensor_lists():
    with pytest.raises(ValueError, match="non-empty list of Tensors"):
        ember.cat([])
    for op in (ember.stack, ember.hstack, ember.vstack, ember.dstack, ember.column_stack):
        with pytest.raises(RuntimeError, match="expects a non-empty TensorList"):
            op([])


# -- arange / linspace / logspace with integer dtypes -------------------------------------------

def test_arange_integer_dtype_truncates_bounds_and_step():
    assert ember.arange(-3.5, 4.2, 1.3, dtype=ember.int32).tolist() == [-3, -2, -1, 0, 1, 2]
    assert ember.arange(5, -5, -1.5, dtype=ember.int64).tolist() == [5, 4, 3, 2, 1, 0, -1, -2, -3, -4]
    assert ember.arange(0.5, 5.5, 1.5, dtype=ember.int64).tolist() == [0, 1, 2, 3, 4]
    assert ember.arange(0.5, 5.5, 1.5, dtype=ember.int32).tolist() == [0, 1, 2, 3]
    assert ember.arange(5.9, -5.9, -2.5, dtype=ember.int16).tolist() == [5, 3, 1, -1, -3]
    assert ember.arange(0, -0.5, -0.3, dtype=ember.int32).tolist() == [0, 0]
    assert ember.arange(250, 260, dtype=ember.uint8).tolist() == [250, 251, 252, 253, 254, 255, 0, 1, 2, 3]


def test_arange_errors():
    with pytest.raises(ValueError, match="step must be nonzero"):
        ember.arange(0, 5, 0.7, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ember.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        ember.arange(0, 0.5, -1, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        ember.arange(5, 0, 0.19, dtype=ember.int64)
    with pytest.raises(RuntimeError):
        ember.arange(0, 1e20)


def test_linspace_integer_dtype():
    assert ember.linspace(-5.5, 5.7, 6, dtype=ember.int32).tolist() == [-5, -3, -1, 1, 3, 5]
    assert ember.linspace(10, -3, 7, dtype=ember.int64).tolist() == [10, 7, 5, 3, 1, 0, -3]
    assert ember.linspace(0, 10, 30, dtype=ember.int64).tolist()[12:18] == [4, 4, 4, 5, 5, 5]
    assert ember.linspace(-5.5, 5.7, 30, dtype=ember.int64).tolist()[12:19] == [0, 0, 0, 0, 0, 0, 1]
    assert ember.linspace(3, 9, 1, dtype=ember.int64).tolist() == [3]
    assert ember.linspace(-32, 200, 3, dtype=ember.uint8).tolist() == [224, 212, 200]  # PyTorch wraps -32
    assert ember.linspace(0, 1, 7, dtype=ember.float16).tolist()[4] == pytest.approx(0.6670, abs=1e-4)
    assert ember.linspace(0, 1, 0, dtype=ember.int64).shape == (0,)
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.linspace(0, 1, -1)
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.linspace(0, 300, 3, dtype=ember.int8)


def test_logspace_integer_dtype():
    assert ember.logspace(0, 3, 7, dtype=ember.int64).tolist() == [1, 3, 10, 31, 100, 316, 1000]
    assert ember.logspace(3, -1, 7, base=2, dtype=ember.int64).tolist() == [8, 5, 3, 2, 1, 0, 0]
    assert ember.logspace(4.58, 9, 1, base=2, dtype=ember.int16).tolist() == [23]  # base ** start, untruncated
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.logspace(0, 1, -1)


# -- split / chunk / views on empty and 0-d tensors ---------------------------------------------

def test_chunk_of_empty_dim_gives_chunks_pieces():
    assert [t.shape for t in ember.chunk(ember.empty(0), 3)] == [(0,)] * 3
    assert [t.shape for t in ember.chunk(ember.empty(0, 4), 3, 0)] == [(0, 4)] * 3
    assert [t.shape for t in ember.chunk(ember.empty(5), 3)] == [(2,), (2,), (1,)]
    with pytest.raises(RuntimeError, match="at least a 1-dimensional"):
        ember.chunk(ember.tensor(1.0), 2)


def test_split_and_tensor_split_on_empty():
    assert [t.shape for t in ember.split(ember.empty(0), 2)] == [(0,)]
    assert [t.shape for t in ember.split(ember.empty(0), 0)] == [(0,)]
    assert [t.shape for t in ember.split(ember.empty(0), [0, 0])] == [(0,), (0,)]
    assert [t.shape for t in ember.tensor_split(ember.empty(0), 3)] == [(0,)] * 3
    assert [t.shape for t in ember.tensor_split(ember.empty(0), [1, 2])] == [(0,)] * 3
    with pytest.raises(RuntimeError, match="split_size can only be 0 if dimension size is 0"):
        ember.split(ember.empty(3), 0)


def test_movedim_and_unflatten_on_0d():
    s = ember.tensor(1.0)
    assert ember.movedim(s, 0, 0).item() == 1.0
    assert ember.movedim(s, -1, 0).shape == ()
    with pytest.raises(IndexError):
        ember.movedim(s, 1, 0)
    with pytest.raises(RuntimeError, match="no dimensions"):
        s.unflatten(0, (1,))
    with pytest.raises(RuntimeError, match="sizes must be non-empty"):
        ember.ones(3).unflatten(0, ())


def test_equal_refuses_a_number():
    with pytest.raises(TypeError, match="argument 'other' .* must be Tensor, not int"):
        ember.equal(ember.ones(1), 3)


def test_searchsorted_and_bucketize_with_empty_boundaries():
    v = ember.tensor([1.0, 2.0])
    assert ember.bucketize(v, ember.tensor([])).tolist() == [0, 0]
    assert ember.searchsorted(ember.tensor([]), v).tolist() == [0, 0]
    assert ember.searchsorted(ember.tensor([]), v, right=True).tolist() == [0, 0]
    assert ember.searchsorted(ember.empty(2, 0), ember.ones(2, 3)).tolist() == [[0, 0, 0], [0, 0, 0]]


def test_tril_triu_indices_match_the_loop_definition():
    for r in range(5):
        for c in range(5):
            for o in range(-6, 7):
                lo = [(i, j) for i in range(r) for j in range(c) if j - i <= o]
                up = [(i, j) for i in range(r) for j in range(c) if j - i >= o]
                assert ember.tril_indices(r, c, o).T.tolist() == [list(p) for p in lo]
                assert ember.triu_indices(r, c, o).T.tolist() == [list(p) for p in up]
                assert ember.tril_indices(r, c, o).shape == (2, len(lo))
    assert ember.tril_indices(4, 3, 1, dtype=ember.int32).dtype is ember.int32
    with pytest.raises(NotImplementedError):
        ember.tril_indices(3, 3, dtype=ember.float32)
    with pytest.raises(RuntimeError, match="row must be non-negative"):
        ember.tril_indices(-1, 3)


def test_tril_indices_is_vectorised():
    t0 = time.perf_counter()
    r = ember.triu_indices(3000, 3000, 1)
    assert r.shape == (2, 3000 * 2999 // 2)
    assert time.perf_counter() - t0 < 5  # the python double loop took ~11 s


# -- allocation failures -----------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: ember.empty(10 ** 13), lambda: ember.zeros(10 ** 13), lambda: ember.ones(10 ** 13, 1000),
    lambda: ember.full((10 ** 13,), 1.0), lambda: ember.randn(10 ** 13), lambda: ember.rand(10 ** 13),
    lambda: ember.arange(10 ** 15), lambda: ember.empty(2 ** 62), lambda: ember.empty(2 ** 40, 2 ** 40),
    lambda: ember.ones(1).expand(10 ** 13).contiguous(), lambda: ember.ones(1).expand(10 ** 13) + 1,
    lambda: ember.linspace(0, 1, 10 ** 13), lambda: ember.eye(10 ** 7),
])
def test_too_large_for_memory_is_runtime_error(make):
    with pytest.raises(RuntimeError):
        make()


def test_size_past_int64_is_type_error():
    with pytest.raises(TypeError, match="Overflow when unpacking long long"):
        ember.empty(2 ** 63)


# -- random ops' parameter checks --------------------------------------------------------------

@pytest.mark.parametrize("call,exc", [
    (lambda: ember.normal(0.0, -1.0, (3,)), RuntimeError),
    (lambda: ember.normal(0.0, float("nan"), (3,)), RuntimeError),
    (lambda: ember.normal(ember.zeros(3), -1.0), RuntimeError),
    (lambda: ember.normal(ember.zeros(3), -ember.ones(3)), RuntimeError),
    (lambda: ember.normal(0.0, -ember.ones(3)), RuntimeError),
    (lambda: ember.normal(ember.zeros(3), 1.0, size=(3,)), TypeError),
    (lambda: ember.zeros(3).normal_(0, -1), RuntimeError),
    (lambda: ember.zeros(3).uniform_(2, 1), RuntimeError),
    (lambda: ember.zeros(3).uniform_(0, float("inf")), RuntimeError),
    (lambda: ember.zeros(3).uniform_(-3e38, 3e38), RuntimeError),
    (lambda: ember.zeros(3, dtype=ember.float16).uniform_(0, 70000), RuntimeError),
    (lambda: ember.zeros(3, dtype=ember.int64).uniform_(0, 1), NotImplementedError),
    (lambda: ember.rand(3, dtype=ember.int64), NotImplementedError),
    (lambda: ember.randn(3, dtype=ember.int64), NotImplementedError),
    (lambda: ember.bernoulli(ember.tensor([1.5])), RuntimeError),
    (lambda: ember.bernoulli(ember.tensor([float("nan")])), RuntimeError),
    (lambda: ember.bernoulli(ember.ones(3, dtype=ember.int64)), NotImplementedError),
    (lambda: ember.zeros(3).bernoulli_(-0.5), RuntimeError),
    (lambda: ember.multinomial(ember.tensor([-1.0, 2.0]), 1), RuntimeError),
    (lambda: ember.multinomial(ember.tensor([float("nan"), 1.0]), 1), RuntimeError),
    (lambda: ember.multinomial(ember.tensor([0.0, 0.0]), 1), RuntimeError),
    (lambda: ember.multinomial(ember.ones(2, dtype=ember.int64), 1), RuntimeError),
    (lambda: ember.randint(5, 5, (3,)), RuntimeError),
    (lambda: ember.randint(0, 3, (3,), dtype=ember.bool), RuntimeError),
    (lambda: ember.randint(0, 300, (3,), dtype=ember.uint8), RuntimeError),
    (lambda: ember.zeros(3).exponential_(0), RuntimeError),
    (lambda: ember.zeros(3).exponential_(-1), RuntimeError),
    (lambda: ember.zeros(3).exponential_(float("nan")), RuntimeError),
    (lambda: ember.zeros(3, dtype=ember.int64).exponential_(), RuntimeError),
    (lambda: ember.zeros(3).geometric_(0), RuntimeError),
    (lambda: ember.zeros(3).geometric_(1), RuntimeError),
    (lambda: ember.zeros(3).geometric_(float("nan")), RuntimeError),
    (lambda: ember.zeros(3).log_normal_(1, 0), RuntimeError),
    (lambda: ember.zeros(3, dtype=ember.int64).log_normal_(), NotImplementedError),
    (lambda: ember.zeros(3).cauchy_(0, 0), RuntimeError),
    (lambda: ember.zeros(3).cauchy_(0, -1), RuntimeError),
    (lambda: ember.zeros(3).random_(5, 5), RuntimeError),
    (lambda: ember.zeros(3).random_(-1), RuntimeError),
    (lambda: ember.zeros(3).random_(0), RuntimeError),
    (lambda: ember.zeros(3, dtype=ember.uint8).random_(0, 300), RuntimeError),
    (lambda: ember.zeros(3, dtype=ember.uint8).random_(-5, 3), RuntimeError),
    (lambda: ember.zeros(3, dtype=ember.bool).random_(0, 3), RuntimeError),
    (lambda: ember.zeros(3, dtype=ember.float16).random_(0, 100000), RuntimeError),
    (lambda: ember.poisson(ember.tensor([-1.0])), RuntimeError),
    (lambda: ember.poisson(ember.tensor([1])), NotImplementedError),
    (lambda: ember.randperm(-1), RuntimeError),
    (lambda: ember.randperm(257, dtype=ember.uint8), RuntimeError),
    (lambda: ember.randperm(2050, dtype=ember.float16), RuntimeError),
    (lambda: ember.randperm(3, dtype=ember.bool), NotImplementedError),
])
def test_random_parameter_checks(call, exc):
    with pytest.raises(exc):
        call()


def test_random_valid_edges():
    assert ember.normal(0.0, 0.0, (3,)).tolist() == [0.0, 0.0, 0.0]
    r = ember.zeros(200).random_(5)  # random_(to): [0, to)
    assert 0 <= r.min().item() and r.max().item() < 5
    assert ember.randperm(256, dtype=ember.uint8).max().item() == 255
    assert ember.zeros(3, dtype=ember.int64).bernoulli_(0.5).dtype is ember.int64
    assert ember.zeros(3, dtype=ember.float16).random_(0, 2049).dtype is ember.float16


def _opencl_device():
    try:
        d = ember.device("opencl:0")
        ember.zeros(1, device=d)
        return d
    except Exception:  # noqa: BLE001 - no opencl platform here
        return None


@pytest.mark.parametrize("call", [
    lambda x, i: ember.index_select(x, 0, i), lambda x, i: ember.take(x, i),
    lambda x, i: ember.nn.functional.embedding(i, x), lambda x, i: x.clone().index_add_(0, i, x[:2].clone()),
    lambda x, i: x.clone().index_fill_(0, i, 1.0), lambda x, i: ember.gather(x, 1, i.reshape(2, 1)),
    lambda x, i: x.clone().put_(i, ember.ones(2, device=x.device)),
])
def test_index_on_another_device_is_pytorchs_device_error(call):
    dev = _opencl_device()
    if dev is None:
        pytest.skip("no opencl device")
    x = ember.arange(12.0).reshape(3, 4).to(dev)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        call(x, ember.tensor([0, 2]))
