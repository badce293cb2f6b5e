"""Tier 4b, property tests: hypothesis draws shapes (empty and 0-d included), broadcasts, dtypes,
layouts, dims and keepdim for the elementwise ops and reductions, and compares each draw with
numpy float64. Example counts are small and fixed; under ``HYPOTHESIS_PROFILE=ci`` (tox sets it,
and it is the default) the draws are derandomized, so CI is deterministic. Set
``HYPOTHESIS_PROFILE=ember-explore`` to search more widely with fresh randomness."""
from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember.testing.helpers import check_once, layouts, supports

hypothesis = pytest.importorskip("hypothesis", reason="the property tests need hypothesis (pip install hypothesis)")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

_COMMON = dict(deadline=None, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                      HealthCheck.data_too_large])
settings.register_profile("ember-ci", max_examples=12, derandomize=True, **_COMMON)
settings.register_profile("ember-explore", max_examples=200, derandomize=False, **_COMMON)
_PROFILE = settings.get_profile("ember-explore" if os.environ.get("HYPOTHESIS_PROFILE") == "ember-explore"
                                else "ember-ci")

FLOATS = (ember.float16, ember.bfloat16, ember.float32, ember.float64)
INTS = (ember.uint8, ember.int8, ember.int32, ember.int64)
ALL = FLOATS + INTS + (ember.bool,)

# name -> (ember fn, numpy reference, dtypes, spec of the second operand, spec of the first)
POS = {"low": 0.1, "high": 4.0}
BINARY = {
    "add": (ember.add, np.add, FLOATS + INTS, {}, {}),
    "sub": (ember.sub, np.subtract, FLOATS + INTS[1:], {}, {}),
    "mul": (ember.mul, np.multiply, ALL, {}, {}),
    "div": (ember.div, np.true_divide, FLOATS + INTS, {"exclude_zero": True}, {}),
    "floor_divide": (ember.floor_divide, np.floor_divide, (ember.float32, ember.float64) + INTS[1:],
                     {"exclude_zero": True}, {}),
    "remainder": (ember.remainder, np.remainder, (ember.float32, ember.float64) + INTS[1:], {"exclude_zero": True}, {}),
    "fmod": (ember.fmod, np.fmod, (ember.float32, ember.float64) + INTS[1:], {"exclude_zero": True}, {}),
    "pow": (ember.pow, np.power, FLOATS, {"low": -2.0, "high": 2.0}, POS),
    "maximum": (ember.maximum, np.maximum, ALL, {}, {}),
    "minimum": (ember.minimum, np.minimum, ALL, {}, {}),
    "fmax": (ember.fmax, np.fmax, FLOATS, {"special": True}, {}),
    "atan2": (ember.atan2, np.arctan2, FLOATS, {}, {}),
    "hypot": (ember.hypot, np.hypot, FLOATS, {}, {}),
    "logaddexp": (ember.logaddexp, np.logaddexp, (ember.float32, ember.float64), {}, {}),
    "eq": (ember.eq, np.equal, ALL, {"low": 0, "high": 3}, {"low": 0, "high": 3}),
    "lt": (ember.lt, np.less, ALL, {}, {}),
    "ge": (ember.ge, np.greater_equal, ALL, {}, {}),
    "logical_xor": (ember.logical_xor, np.logical_xor, ALL, {}, {}),
    "bitwise_and": (ember.bitwise_and, np.bitwise_and, INTS + (ember.bool,), {}, {}),
    "bitwise_or": (ember.bitwise_or, np.bitwise_or, INTS + (ember.bool,), {}, {}),
}
UNARY = {
    "neg": (ember.neg, np.negative, FLOATS + INTS[1:], {}),
    "abs": (ember.abs, np.abs, FLOATS + INTS, {}),
    "exp": (ember.exp, np.exp, FLOATS, {}),
    "log": (ember.log, np.log, FLOATS, POS),
    "sqrt": (ember.sqrt, np.sqrt, FLOATS, POS),
    "sin": (ember.sin, np.sin, FLOATS, {}),
    "tanh": (ember.tanh, np.tanh, FLOATS, {}),
    "sigmoid": (ember.sigmoid, lambda x: 1 / (1 + np.exp(-x)), FLOATS, {}),
    "floor": (ember.floor, np.floor, FLOATS + INTS, {}),
    "round": (ember.round, np.round, FLOATS, {}),
    "sign": (ember.sign, np.sign, FLOATS + INTS[1:], {}),
    "isnan": (ember.isnan, np.isnan, FLOATS, {"special": True}),
    "logical_not": (ember.logical_not, np.logical_not, ALL, {}),
    "square": (ember.square, np.square, FLOATS + INTS[1:], {}),
}


def _dtypes_on(device, dtypes):
    return [d for d in dtypes if supports(device, d)]


def _layout_for(data, shapes):
    nd = min((len(s) for s in shapes), default=0)
    return data.draw(st.sampled_from(layouts(nd)), label="layout")


@_PROFILE
@given(data=st.data())
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast(device, name, data):
    fn, ref, dtypes, spec_b, spec_a = BINARY[name]
    dt = data.draw(st.sampled_from(_dtypes_on(device, dtypes)), label="dtype")
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=4),
                       label="shapes").input_shapes
    layout = _layout_for(data, shapes)
    seed = data.draw(st.integers(0, 2 ** 16), label="seed")
    check_once(fn, ref, [dict(shape=shapes[0], **spec_a), dict(shape=shapes[1], **spec_b)], device=device, dtype=dt,
               layout=layout, seed=seed, name=name)


@_PROFILE
@given(data=st.data())
@pytest.mark.parametrize("name", ["add", "mul", "sub", "maximum", "lt", "div", "pow"])
def test_binary_with_python_scalar(device, name, data):
    fn, ref, dtypes, spec_b, spec_a = BINARY[name]
    dt = data.draw(st.sampled_from(_dtypes_on(device, [d for d in dtypes if d is not ember.bool])), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), label="shape")
    is_int = dt.category < ember.float32.category
    if name == "pow":
        scalar = data.draw(st.sampled_from([2, 0.5, -1.0, 3]), label="scalar")
    elif name == "div":
        scalar = data.draw(st.sampled_from([2, -3, 0.5, 4.0]), label="scalar")
    else:
        scalar = data.draw(st.integers(0, 5) if dt is ember.uint8 else (st.integers(-5, 5) if is_int else
                                                                         st.floats(-4, 4, width=16)), label="scalar")
    left = data.draw(st.booleans(), label="scalar on the left") and name not in ("pow", "div")
    seed = data.draw(st.integers(0, 2 ** 16), label="seed")
    if left:
        check_once(lambda x: fn(scalar, x), lambda x: ref(scalar, x), [dict(shape=shape, **spec_b)], device=device,
                   dtype=dt, layout=_layout_for(data, [shape]), seed=seed, name=f"{name}_scalar_left")
    else:
        check_once(lambda x: fn(x, scalar), lambda x: ref(x, scalar), [dict(shape=shape, **spec_a)], device=device,
                   dtype=dt, layout=_layout_for(data, [shape]), seed=seed, name=f"{name}_scalar_right")


@_PROFILE
@given(data=st.data())
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(device, name, data):
    fn, ref, dtypes, spec = UNARY[name]
    dt = data.draw(st.sampled_from(_dtypes_on(device, dtypes)), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4), label="shape")
    seed = data.draw(st.integers(0, 2 ** 16), label="seed")
    check_once(fn, ref, [dict(shape=shape, **spec)], device=device, dtype=dt, layout=_layout_for(data, [shape]),
               seed=seed, name=name)


@_PROFILE
@given(data=st.data())
def test_where_broadcast(device, data):
    dt = data.draw(st.sampled_from(_dtypes_on(device, ALL)), label="dtype")
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=3),
                       label="shapes").input_shapes
    seed = data.draw(st.integers(0, 2 ** 16), label="seed")
    check_once(lambda c, a, b: ember.where(c > 0, a, b), lambda c, a, b: np.where(c > 0, a, b),
               [dict(shape=shapes[0], dtype=ember.float32), shapes[1], shapes[2]], device=device, dtype=dt,
               layout=_layout_for(data, shapes), seed=seed, name="where")


def _dims(data, ndim, single=False):
    """A dim argument: None, an int (maybe negative) or a tuple of distinct dims."""
    if ndim == 0:
        return data.draw(st.sampled_from([None, 0, -1] if single else [None, 0, -1, ()]), label="dim")
    one = st.integers(-ndim, ndim - 1)
    if single:
        return data.draw(st.one_of(st.none(), one), label="dim")
    many = st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True).map(
        lambda ds: tuple(d - ndim if i % 2 else d for i, d in enumerate(ds)))
    return data.draw(st.one_of(st.none(), one, many), label="dim")


def _np_axis(dim, ndim):
    if dim is None or dim == ():
        return None
    if ndim == 0:
        return None
    return dim


# name -> (ember fn(x, dim, keepdim), numpy fn(x, axis, keepdims), dtypes, needs non-empty, spec)
REDUCTIONS = {
    "sum": (lambda x, d, k: ember.sum(x, d, k), lambda x, a, k: np.sum(x, a, keepdims=k), FLOATS + INTS, False, {}),
    "mean": (lambda x, d, k: ember.mean(x, d, k), lambda x, a, k: np.mean(x, a, keepdims=k), FLOATS, True, {}),
    "prod": (lambda x, d, k: ember.prod(x, d, k), lambda x, a, k: np.prod(x, a, keepdims=k), FLOATS + INTS[2:], False,
             {"low": -1, "high": 1.2}),
    "amax": (lambda x, d, k: ember.amax(x, () if d is None else d, k), lambda x, a, k: np.amax(x, a, keepdims=k),
             FLOATS + INTS, True, {}),
    "amin": (lambda x, d, k: ember.amin(x, () if d is None else d, k), lambda x, a, k: np.amin(x, a, keepdims=k),
             FLOATS + INTS, True, {}),
    "var": (lambda x, d, k: ember.var(x, d, keepdim=k, correction=0), lambda x, a, k: np.var(x, a, keepdims=k),
            (ember.float32, ember.float64), True, {}),
    "logsumexp": (lambda x, d, k: ember.logsumexp(x, () if d is None else d, k),
                  lambda x, a, k: np.log(np.sum(np.exp(x), a, keepdims=k)), (ember.float32, ember.float64), True, {}),
    "all": (lambda x, d, k: ember.all(x, d, k), lambda x, a, k: np.all(x, a, keepdims=k), ALL, False,
            {"low": 0, "high": 3}),
    "any": (lambda x, d, k: ember.any(x, d, k), lambda x, a, k: np.any(x, a, keepdims=k), ALL, False,
            {"low": -1, "high": 1}),
    "count_nonzero": (lambda x, d, k: ember.count_nonzero(x, d), lambda x, a, k: np.count_nonzero(x, a), ALL, False,
                      {"low": -1, "high": 2}),
}


@_PROFILE
@given(data=st.data())
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_dims(device, name, data):
    fn, ref, dtypes, nonempty, spec = REDUCTIONS[name]
    dt = data.draw(st.sampled_from(_dtypes_on(device, dtypes)), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1 if nonempty else 0, max_side=4),
                      label="shape")
    dim = _dims(data, len(shape), single=name == "prod")  # prod takes one dim, as PyTorch
    if name in ("all", "any") and dim == ():
        dim = None  # () reduces nothing for all/any (as PyTorch), everything for the others
    keepdim = data.draw(st.booleans(), label="keepdim") and name != "count_nonzero"
    seed = data.draw(st.integers(0, 2 ** 16), label="seed")
    nd = len(shape)
    check_once(lambda x: fn(x, dim, keepdim), lambda x: ref(x, _np_axis(dim, nd), keepdim), [dict(shape=shape, **spec)],
               device=device, dtype=dt, layout=_layout_for(data, [shape]), seed=seed, name=f"{name}(dim={dim!r}, "
               f"keepdim={keepdim})")


@_PROFILE
@given(data=st.data())
@pytest.mark.parametrize("name", ["argmax", "argmin", "max", "min", "cumsum", "cumprod", "sort"])
def test_dim_reductions(device, name, data):
    dt = data.draw(st.sampled_from(_dtypes_on(device, FLOATS + INTS[2:])), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), label="shape")
    nd = len(shape)
    dim = data.draw(st.integers(-nd, nd - 1), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    seed = data.draw(st.integers(0, 2 ** 16), label="seed")
    spec = {"low": 0, "high": 3} if name in ("argmax", "argmin", "max", "min") else {"low": -2, "high": 2}
    if name == "argmax":
        fn, ref = (lambda x: ember.argmax(x, dim, keepdim)), (lambda x: _keep(np.argmax(x, dim), dim, keepdim))
    elif name == "argmin":
        fn, ref = (lambda x: ember.argmin(x, dim, keepdim)), (lambda x: _keep(np.argmin(x, dim), dim, keepdim))
    elif name == "max":
        fn, ref = (lambda x: tuple(ember.max(x, dim, keepdim))), \
            (lambda x: (np.max(x, dim, keepdims=keepdim), _keep(np.argmax(x, dim), dim, keepdim)))
    elif name == "min":
        fn, ref = (lambda x: tuple(ember.min(x, dim, keepdim))), \
            (lambda x: (np.min(x, dim, keepdims=keepdim), _keep(np.argmin(x, dim), dim, keepdim)))
    elif name == "cumsum":
        fn, ref = (lambda x: ember.cumsum(x, dim)), (lambda x: np.cumsum(x, dim))
    elif name == "cumprod":
        fn, ref = (lambda x: ember.cumprod(x, dim)), (lambda x: np.cumprod(x, dim))
    else:
        fn, ref = (lambda x: ember.sort(x, dim, stable=True).values), (lambda x: np.sort(x, dim, kind="stable"))
    check_once(fn, ref, [dict(shape=shape, **spec)], device=device, dtype=dt, layout=_layout_for(data, [shape]),
               seed=seed, name=f"{name}(dim={dim}, keepdim={keepdim})")


def _keep(a, dim, keepdim):
    return np.expand_dims(a, dim) if keepdim else a
