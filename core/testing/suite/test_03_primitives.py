"""Tier 3, primitives: every op of ember.ops.primitives against numpy float64 references, on
contiguous and non-contiguous inputs, for every dtype the op supports; then the contract of
ember.ops.primitives checked on the backend's kernels themselves: their signatures, the four
primitives that write into their first argument, and bool semantics (bool is stored as 0/1
bytes; add/maximum/scatter_add are logical or, mul/minimum logical and, amax any, amin all)."""
import inspect

import numpy as np
import pytest

import ember
from ember.ops.primitives import IN_PLACE, PRIMITIVES, SIGNATURES, arity
from ember.testing.helpers import backend_for, supports
from ember.testing.suite.optable import PRIMITIVE_CASES


@pytest.mark.parametrize("case", PRIMITIVE_CASES, ids=[c.name for c in PRIMITIVE_CASES])
def test_primitive(device, case):
    case.run(device)


# -- the kernels' signatures ---------------------------------------------------------------------

@pytest.mark.parametrize("name", PRIMITIVES)
def test_primitive_kernel_signature(device, name):
    """Each primitive kernel takes the positional arguments ember.ops.primitives.SIGNATURES
    lists (argmax/argmin: ``(x, dim, keepdim)``), and ``out=`` when named in ``out_kernels``."""
    be = backend_for(device)
    assert name in be.kernels, f"backend {be.name!r} has no kernel for primitive {name!r} ({SIGNATURES[name]})"
    kernel = be.kernels[name]
    try:
        sig = inspect.signature(kernel)
    except (TypeError, ValueError):
        pytest.skip(f"{name}: the kernel's signature can't be introspected")
    n = arity(name)
    try:
        sig.bind(*range(n))
    except TypeError as e:
        raise AssertionError(f"{name}: the kernel must accept {n} positional arguments: {SIGNATURES[name]} "
                             f"(its signature is {name}{sig}): {e}") from None
    if name in be.out_kernels:
        try:
            sig.bind(*range(n), out=None)
        except TypeError:
            raise AssertionError(f"{name} is in out_kernels but its kernel takes no out= ({name}{sig})") from None


@pytest.mark.parametrize("keepdim", [False, True])
def test_argmax_argmin_take_keepdim(device, keepdim):
    x = ember.tensor([[[3, 9, 1], [7, 2, 8]], [[5, 5, 0], [4, 6, 6]]], dtype=ember.float32, device=device)
    a = x.numpy(force=True)
    for name, ref in (("argmax", np.argmax), ("argmin", np.argmin)):
        k = backend_for(device).kernels[name]
        for dim in (0, 1, 2):
            r = k(x, dim, keepdim)
            assert r.dtype is ember.int64, f"{name}(x, {dim}, {keepdim}) gave {r.dtype}"
            exp = ref(a, axis=dim, keepdims=keepdim)
            assert tuple(r.shape) == exp.shape and r.tolist() == exp.tolist(), f"{name}(x, {dim}, {keepdim})"
        r = k(x, None, False)  # the flattened tensor: a 0-d result
        assert r.dtype is ember.int64 and tuple(r.shape) == () and r.item() == int(ref(a))
        front = getattr(ember, name)(x, 1, keepdim=keepdim)
        assert tuple(front.shape) == ((2, 1, 3) if keepdim else (2, 3))


# -- the primitives that write: in place, through the geometry, returning the first argument --

def _base_and_view(device, dtype=ember.float32):
    base = ember.zeros(8, dtype=dtype, device=device)
    return base, base[2:6]  # a view at an offset: its writes must show in base, and only there


@pytest.mark.parametrize("name", IN_PLACE)
def test_in_place_primitives_write_through_views(device, name):
    be = backend_for(device)
    base, view = _base_and_view(device)
    other = base[1:7]  # another view of the same storage
    storage = base.untyped_storage()
    k = be.kernels[name]
    if name == "copy_":
        r = k(view, ember.tensor([1.0, 2.0, 3.0, 4.0], device=device))
        expected = [0, 0, 1, 2, 3, 4, 0, 0]
    elif name == "fill_":
        r = k(view, 5.0)
        expected = [0, 0, 5, 5, 5, 5, 0, 0]
    else:
        r = k(view, 0.5, 1.0, be.create_generator(device)) if name == "uniform_" else \
            k(view, 10.0, 0.5, be.create_generator(device))
        expected = None
    assert r is view, f"{name} must return its first argument itself (got {r!r})"
    got = base.tolist()
    if expected is not None:
        assert got == expected, f"{name} through base[2:6]: the base reads {got}, expected {expected}"
    else:
        lo, hi = (0.5, 1.0) if name == "uniform_" else (5.0, 15.0)
        assert got[:2] == [0, 0] and got[6:] == [0, 0], f"{name} wrote outside its view: {got}"
        assert all(lo <= v <= hi for v in got[2:6]), f"{name} did not fill the view: {got}"
    assert other.tolist() == got[1:7], "another view of the storage must see the write"
    assert base.untyped_storage() is storage, "a write keeps the storage object (a backend may rebind its _data)"


# -- bool ---------------------------------------------------------------------------------------

def _bool(values, device):
    return ember.tensor(values, dtype=ember.bool, device=device)


def _check_bool(r, expected, what, device):
    assert r.dtype is ember.bool, f"{what}: expected a bool result, got {r.dtype}"
    assert r.tolist() == expected, f"{what}: got {r.tolist()}, expected {expected}"
    if supports(device, ember.uint8):  # bool is stored as 0/1 bytes (True + True is stored as 1, not 2)
        stored = r.view(ember.uint8).tolist()
        flat = np.asarray(stored).reshape(-1).tolist()
        assert set(flat) <= {0, 1}, f"{what}: bool stored as bytes {stored} (must be 0 or 1)"


A = [True, True, False, False]
B = [True, False, True, False]
BOOL_BINARY = {
    "add": [True, True, True, False], "mul": [True, False, False, False],
    "maximum": [True, True, True, False], "minimum": [True, False, False, False],
    "eq": [True, False, False, True], "ne": [False, True, True, False], "lt": [False, False, True, False],
    "le": [True, False, True, True], "gt": [False, True, False, False], "ge": [True, True, False, True],
    "logical_and": [True, False, False, False], "logical_or": [True, True, True, False],
    "logical_xor": [False, True, True, False], "bitwise_and": [True, False, False, False],
    "bitwise_or": [True, True, True, False], "bitwise_xor": [False, True, True, False],
}


@pytest.mark.parametrize("name", list(BOOL_BINARY))
def test_bool_binary(device, name):
    """PyTorch's bool arithmetic: add/maximum are or, mul/minimum and; False < True."""
    k = backend_for(device).kernels[name]
    _check_bool(k(_bool(A, device), _bool(B, device)), BOOL_BINARY[name], f"{name}(bool, bool)", device)
    # strided operands: a transposed 2x2 against a row broadcast along dim 0
    a = _bool([[True, False], [True, False]], device).t()  # [[T, T], [F, F]]
    b = _bool([True, False], device).expand(2, 2)
    exp = np.array(BOOL_BINARY[name]).reshape(2, 2).tolist()
    _check_bool(k(a, b), exp, f"{name}(bool transposed, bool expanded)", device)


@pytest.mark.parametrize("name", ["add", "mul", "maximum", "logical_or", "bitwise_xor"])
def test_bool_with_a_python_scalar(device, name):
    k = backend_for(device).kernels[name]
    exp = {"add": [True] * 4, "mul": A, "maximum": [True] * 4, "logical_or": [True] * 4,
           "bitwise_xor": [not v for v in A]}[name]
    _check_bool(k(_bool(A, device), True), exp, f"{name}(bool, True)", device)


def test_bool_scatter_add_is_logical_or(device):
    k = backend_for(device).kernels["scatter_add"]
    x = _bool([False, True, False, False, False], device)
    index = ember.tensor([0, 0, 1, 1, 2, 3], dtype=ember.int64, device=device)
    src = _bool([True, True, True, False, False, False], device)
    # x[0] gets True twice (True + True stays True, stored as 1), x[1] stays True, x[2] and x[3] get False
    _check_bool(k(x, 0, index, src), [True, True, False, False, False], "scatter_add on bool", device)
    assert x.tolist() == [False, True, False, False, False], "scatter_add must not modify its input"
    front = ember.scatter_add(x, 0, index, src)
    _check_bool(front, [True, True, False, False, False], "ember.scatter_add on bool", device)


def test_bool_amax_amin_are_any_all(device):
    be = backend_for(device)
    m = _bool([[True, False, False], [False, False, False]], device)
    _check_bool(be.kernels["amax"](m, (1,), False), [True, False], "amax(bool, (1,))", device)
    _check_bool(be.kernels["amin"](m, (0, 1), True), [[False]], "amin(bool, (0, 1), keepdim)", device)
    _check_bool(be.kernels["amax"](m, (0,), True), [[True, False, False]], "amax(bool, (0,), keepdim)", device)
    _check_bool(be.kernels["amin"](_bool([[True, True]], device), (1,), False), [True], "amin(all True)", device)


def test_bool_where_gather_nonzero_logical_not(device):
    k = backend_for(device).kernels
    a, b = _bool(A, device), _bool(B, device)
    _check_bool(k["where"](b, a, _bool([False] * 4, device)), [True, False, False, False], "where on bool", device)
    index = ember.tensor([3, 0, 1], device=device)
    _check_bool(k["gather"](a, 0, index), [False, True, True], "gather on bool", device)
    _check_bool(k["logical_not"](a), [False, False, True, True], "logical_not(bool)", device)
    nz = k["nonzero"](_bool([[False, True], [True, True]], device))
    assert nz.dtype is ember.int64 and nz.tolist() == [[0, 1], [1, 0], [1, 1]]


def test_copy_casts_to_and_from_bool(device):
    k = backend_for(device).kernels["copy_"]
    t = _bool([True] * 5, device)
    k(t, ember.tensor([0.5, 0.0, float("nan"), -0.0, -3.0], device=device))  # nonzero (NaN included) is True
    _check_bool(t, [True, False, True, False, True], "copy_ float32 -> bool", device)
    k(t, ember.tensor([0, 2, -1, 0, 255], dtype=ember.int64, device=device))
    _check_bool(t, [False, True, True, False, True], "copy_ int64 -> bool", device)
    f = ember.full((4,), 7.0, device=device)
    k(f, _bool(A, device))
    assert f.tolist() == [1.0, 1.0, 0.0, 0.0]
    t = _bool([False] * 3, device)
    assert backend_for(device).kernels["fill_"](t, True) is t
    _check_bool(t, [True] * 3, "fill_(bool, True)", device)
