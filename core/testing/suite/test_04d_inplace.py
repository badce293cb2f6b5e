"""Tier 4d, in-place variants and ``out=``: ``x.f_(...)`` equals ``f(x, ...)``, returns ``x``,
keeps its dtype, writes through views into their base and bumps the version counter; ``out=``
receives the result (resized when empty) and is returned; PyTorch's refusals hold (a result
dtype that can't be cast, a shape that would have to grow, stride-0 targets, leaves that
require grad)."""
import numpy as np
import pytest

import ember


def _t(device, shape=(3, 4), dtype=ember.float32, lo=0.2, hi=0.9, seed=0):
    a = np.random.default_rng(seed).uniform(lo, hi, shape)
    return ember.tensor(a, dtype=dtype, device=device)


def _i(device, shape=(3, 4), seed=0):
    return ember.tensor(np.random.default_rng(seed).integers(1, 6, shape), device=device)


# (method, out-of-place function, extra args built from the device, kind of self)
INPLACE = [
    ("add_", ember.add, lambda d: (_t(d, seed=1),), "f"), ("sub_", ember.sub, lambda d: (_t(d, seed=1),), "f"),
    ("mul_", ember.mul, lambda d: (2.5,), "f"), ("div_", ember.div, lambda d: (_t(d, seed=1),), "f"),
    ("true_divide_", ember.true_divide, lambda d: (3.0,), "f"),
    ("floor_divide_", ember.floor_divide, lambda d: (_t(d, seed=1),), "f"),
    ("remainder_", ember.remainder, lambda d: (0.3,), "f"), ("fmod_", ember.fmod, lambda d: (0.3,), "f"),
    ("pow_", ember.pow, lambda d: (_t(d, seed=1),), "f"), ("atan2_", ember.atan2, lambda d: (_t(d, seed=1),), "f"),
    ("hypot_", ember.hypot, lambda d: (_t(d, seed=1),), "f"), ("copysign_", ember.copysign, lambda d: (-1.0,), "f"),
    ("xlogy_", ember.xlogy, lambda d: (_t(d, seed=1),), "f"),
    ("lerp_", ember.lerp, lambda d: (_t(d, seed=1), 0.3), "f"),
    ("clamp_", ember.clamp, lambda d: (0.3, 0.6), "f"), ("clamp_min_", ember.clamp_min, lambda d: (0.5,), "f"),
    ("clamp_max_", ember.clamp_max, lambda d: (0.5,), "f"), ("clip_", ember.clip, lambda d: (0.3, 0.6), "f"),
    ("addcmul_", ember.addcmul, lambda d: (_t(d, seed=1), _t(d, seed=2)), "f"),
    ("addcdiv_", ember.addcdiv, lambda d: (_t(d, seed=1), _t(d, seed=2)), "f"),
    ("neg_", ember.neg, lambda d: (), "f"), ("abs_", ember.abs, lambda d: (), "f"),
    ("reciprocal_", ember.reciprocal, lambda d: (), "f"), ("sqrt_", ember.sqrt, lambda d: (), "f"),
    ("rsqrt_", ember.rsqrt, lambda d: (), "f"), ("square_", ember.square, lambda d: (), "f"),
    ("exp_", ember.exp, lambda d: (), "f"), ("exp2_", ember.exp2, lambda d: (), "f"),
    ("expm1_", ember.expm1, lambda d: (), "f"), ("log_", ember.log, lambda d: (), "f"),
    ("log2_", ember.log2, lambda d: (), "f"), ("log10_", ember.log10, lambda d: (), "f"),
    ("log1p_", ember.log1p, lambda d: (), "f"), ("sin_", ember.sin, lambda d: (), "f"),
    ("cos_", ember.cos, lambda d: (), "f"), ("tan_", ember.tan, lambda d: (), "f"),
    ("asin_", ember.asin, lambda d: (), "f"), ("acos_", ember.acos, lambda d: (), "f"),
    ("atan_", ember.atan, lambda d: (), "f"), ("sinh_", ember.sinh, lambda d: (), "f"),
    ("cosh_", ember.cosh, lambda d: (), "f"), ("tanh_", ember.tanh, lambda d: (), "f"),
    ("asinh_", ember.asinh, lambda d: (), "f"), ("atanh_", ember.atanh, lambda d: (), "f"),
    ("sigmoid_", ember.sigmoid, lambda d: (), "f"), ("logit_", ember.logit, lambda d: (), "f"),
    ("erf_", ember.erf, lambda d: (), "f"), ("erfc_", ember.erfc, lambda d: (), "f"),
    ("erfinv_", ember.erfinv, lambda d: (), "f"), ("floor_", ember.floor, lambda d: (), "f"),
    ("ceil_", ember.ceil, lambda d: (), "f"), ("round_", ember.round, lambda d: (), "f"),
    ("trunc_", ember.trunc, lambda d: (), "f"), ("frac_", ember.frac, lambda d: (), "f"),
    ("sign_", ember.sign, lambda d: (), "f"), ("sgn_", ember.sgn, lambda d: (), "f"),
    ("relu_", ember.relu, lambda d: (), "f"), ("nan_to_num_", ember.nan_to_num, lambda d: (), "f"),
    ("deg2rad_", ember.deg2rad, lambda d: (), "f"), ("sinc_", ember.sinc, lambda d: (), "f"),
    ("eq_", ember.eq, lambda d: (_t(d, seed=1),), "f"), ("lt_", ember.lt, lambda d: (0.5,), "f"),
    ("ge_", ember.ge, lambda d: (_t(d, seed=1),), "f"),
    ("logical_and_", ember.logical_and, lambda d: (_t(d, seed=1) > 0.5,), "f"),
    ("logical_not_", ember.logical_not, lambda d: (), "f"),
    ("bitwise_and_", ember.bitwise_and, lambda d: (_i(d, seed=1),), "i"),
    ("bitwise_or_", ember.bitwise_or, lambda d: (6,), "i"),
    ("bitwise_xor_", ember.bitwise_xor, lambda d: (_i(d, seed=1),), "i"),
    ("bitwise_not_", ember.bitwise_not, lambda d: (), "i"),
    ("bitwise_left_shift_", ember.bitwise_left_shift, lambda d: (2,), "i"),
    ("bitwise_right_shift_", ember.bitwise_right_shift, lambda d: (1,), "i"),
    ("cumsum_", ember.cumsum, lambda d: (1,), "f"), ("cumprod_", ember.cumprod, lambda d: (0,), "f"),
    ("tril_", ember.tril, lambda d: (), "f"), ("triu_", ember.triu, lambda d: (1,), "f"),
    ("masked_fill_", ember.masked_fill, lambda d: (_t(d, seed=1) > 0.5, -1.0), "f"),
    ("masked_scatter_", ember.masked_scatter, lambda d: (_t(d, seed=1) > 0.5, _t(d, seed=2)), "f"),
    ("index_fill_", ember.index_fill, lambda d: (1, ember.tensor([0, 3], device=d), -1.0), "f"),
    ("index_add_", ember.index_add, lambda d: (0, ember.tensor([2, 0], device=d), _t(d, (2, 4), seed=1)), "f"),
    ("index_copy_", ember.index_copy, lambda d: (0, ember.tensor([2, 0], device=d), _t(d, (2, 4), seed=1)), "f"),
    ("index_put_", ember.index_put, lambda d: ((ember.tensor([0, 2], device=d),), ember.tensor(5.0, device=d)), "f"),
    ("put_", ember.put, lambda d: (ember.tensor([0, -1], device=d), _t(d, (2,), seed=1)), "f"),
    ("scatter_", ember.scatter, lambda d: (1, ember.tensor([[0], [3], [1]], device=d), _t(d, seed=1)), "f"),
    ("scatter_add_", ember.scatter_add, lambda d: (1, ember.tensor([[0, 0], [3, 1], [1, 1]], device=d), _t(d, seed=1)),
     "f"),
    ("scatter_reduce_", ember.scatter_reduce,
     lambda d: (1, ember.tensor([[0, 0], [3, 1], [1, 1]], device=d), _t(d, seed=1), "amax"), "f"),
    ("addmm_", ember.addmm, lambda d: (_t(d, (3, 2), seed=1), _t(d, (2, 4), seed=2)), "f"),
    ("addr_", ember.addr, lambda d: (_t(d, (3,), seed=1), _t(d, (4,), seed=2)), "f"),
    ("addmv_", ember.addmv, lambda d: (_t(d, (3, 5), seed=1), _t(d, (5,), seed=2)), "v"),
    ("baddbmm_", ember.baddbmm, lambda d: (_t(d, (2, 3, 2), seed=1), _t(d, (2, 2, 4), seed=2)), "b"),
    ("addbmm_", ember.addbmm, lambda d: (_t(d, (2, 3, 2), seed=1), _t(d, (2, 2, 4), seed=2)), "f"),
    ("index_reduce_", ember.index_reduce, lambda d: (0, ember.tensor([2, 2], device=d), _t(d, (2, 4), seed=1), "amax"),
     "f"),
    ("ne_", ember.ne, lambda d: (0.5,), "f"), ("le_", ember.le, lambda d: (_t(d, seed=1),), "f"),
    ("gt_", ember.gt, lambda d: (0.5,), "f"), ("logical_or_", ember.logical_or, lambda d: (_t(d, seed=1) > 0.5,), "f"),
    ("logical_xor_", ember.logical_xor, lambda d: (_t(d, seed=1) > 0.5,), "f"),
    ("heaviside_", ember.heaviside, lambda d: (_t(d, (4,), seed=1),), "f"),
    ("float_power_", ember.float_power, lambda d: (2.5,), "d"), ("rad2deg_", ember.rad2deg, lambda d: (), "f"),
    ("negative_", ember.negative, lambda d: (), "f"), ("absolute_", ember.absolute, lambda d: (), "f"),
    ("subtract_", ember.subtract, lambda d: (_t(d, seed=1),), "f"), ("multiply_", ember.multiply, lambda d: (3,), "f"),
    ("divide_", ember.divide, lambda d: (_t(d, seed=1),), "f"), ("greater_", ember.greater, lambda d: (0.5,), "f"),
    ("less_", ember.less, lambda d: (0.5,), "f"), ("not_equal_", ember.not_equal, lambda d: (0.5,), "f"),
    ("arcsin_", ember.arcsin, lambda d: (), "f"), ("arccos_", ember.arccos, lambda d: (), "f"),
    ("arctan_", ember.arctan, lambda d: (), "f"), ("arctan2_", ember.arctan2, lambda d: (_t(d, seed=1),), "f"),
    ("arcsinh_", ember.arcsinh, lambda d: (), "f"), ("arccosh_", ember.arccosh, lambda d: (), "g"),
    ("acosh_", ember.acosh, lambda d: (), "g"), ("arctanh_", ember.arctanh, lambda d: (), "f"),
    ("fix_", ember.fix, lambda d: (), "f"), ("sinc_", ember.sinc, lambda d: (), "f"),
]


def _self(device, kind):
    if kind == "i":
        return _i(device)
    if kind == "v":
        return _t(device, (3,))
    if kind == "b":
        return _t(device, (2, 3, 4))
    if kind == "d":
        return _t(device, dtype=ember.float64)
    if kind == "g":
        return _t(device, lo=1.2, hi=3.0)
    return _t(device)


def _strided(t):
    """A non-contiguous view holding ``t``'s values (transposed, or every other element)."""
    if t.dim() >= 2:
        return t.mT.contiguous().mT
    big = ember.zeros(t.shape[0] * 2, dtype=t.dtype, device=t.device)
    big[::2] = t
    return big[::2]


@pytest.mark.parametrize("case", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_matches_out_of_place(device, case):
    name, fn, args, kind = case
    x = _self(device, kind)
    a = args(device)
    expected = fn(x.clone(), *a)
    v = x._version[0]
    r = getattr(x, name)(*a)
    assert r is x, f"{name} must return self"
    assert x.dtype is _self(device, kind).dtype, f"{name} must keep self's dtype"
    assert x._version[0] > v, f"{name} must bump the version counter"
    np.testing.assert_allclose(x.numpy(force=True).astype(np.float64),
                               expected.to(x.dtype).numpy(force=True).astype(np.float64), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_writes_through_a_view(device, case):
    name, fn, args, kind = case
    view = _strided(_self(device, kind))
    base = view._base
    assert not view.is_contiguous() and base is not None
    a = args(device)
    expected = fn(view.clone(), *a)
    v = base._version[0]
    getattr(view, name)(*a)
    assert base._version[0] > v, f"{name} on a view must bump the shared version counter"
    # the values landed in the base's storage, seen through a fresh view of the same geometry
    again = ember.as_strided(base, view.shape, view.stride(), view.storage_offset())
    np.testing.assert_allclose(again.numpy(force=True).astype(np.float64),
                               expected.to(base.dtype).numpy(force=True).astype(np.float64), rtol=1e-6, atol=1e-6)


def test_inplace_refusals(device):
    i = ember.tensor([1, 2, 3], device=device)
    for call in (lambda: i.add_(0.5), lambda: i.div_(2), lambda: i.sqrt_(), lambda: i.clamp_(0.5, 2.5),
                 lambda: i.floor_divide_(1.5)):
        with pytest.raises(RuntimeError, match="can't be cast"):
            call()
    with pytest.raises(NotImplementedError, match="lerp_kernel_scalar"):  # lerp takes floats only, as PyTorch
        i.lerp_(i, 0.5)
    assert i.tolist() == [1, 2, 3]
    x = ember.ones(3, 1, device=device)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        x.add_(ember.ones(1, 4, device=device))
    e = ember.zeros(1, device=device).expand(3)
    with pytest.raises(RuntimeError, match="single memory location"):
        e.add_(1)
    w = ember.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.mul_(2)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.t_()
    with ember.no_grad():
        w.mul_(2)
    assert w.tolist() == [2.0, 2.0]


def test_memory_inplace_ops(device):
    x = ember.arange(6.0, device=device).reshape(2, 3)
    v = x._version[0]
    assert x.zero_() is x and x.tolist() == [[0.0] * 3] * 2
    assert x.copy_(ember.arange(3.0, device=device)) is x and x.tolist() == [[0.0, 1.0, 2.0]] * 2  # broadcast source
    assert x.fill_(7) is x and x.tolist() == [[7.0] * 3] * 2
    assert x.resize_(3, 2) is x and x.shape == (3, 2)
    assert x._version[0] == v + 4
    i = ember.zeros(3, dtype=ember.int64, device=device)
    i.copy_(ember.tensor([1.7, -2.2, 3.0], device=device))  # copy_ casts to self's dtype (truncating)
    assert i.tolist() == [1, -2, 3]


def test_inplace_view_ops(device):
    x = ember.arange(6.0, device=device).reshape(2, 3)
    v = x._version[0]
    assert x.t_() is x and x.shape == (3, 2) and x.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    x.unsqueeze_(0)
    assert x.shape == (1, 3, 2)
    x.squeeze_()
    x.transpose_(0, 1)
    x.swapaxes_(0, 1)
    x.swapdims_(1, 0)
    assert x.shape == (2, 3) and x._version[0] == v + 6
    y = ember.arange(6.0, device=device)
    y.as_strided_((2, 2), (1, 2))
    assert y.tolist() == [[0.0, 2.0], [1.0, 3.0]]
    a = ember.ones(2, 3, device=device, requires_grad=True)
    y = a * 2
    y.t_()
    (y * ember.arange(6.0, device=device).reshape(3, 2)).sum().backward()
    assert a.grad.tolist() == [[0.0, 4.0, 8.0], [2.0, 6.0, 10.0]]


def test_inplace_autograd(device):
    a = ember.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    y = a.clone()
    y.mul_(a).add_(1.0).clamp_(max=5.0)
    y.sum().backward()
    assert a.grad.tolist() == [2.0, 4.0, 0.0]


# (function, args, keyword args) for out=
OUT = [
    (ember.add, lambda d: (_t(d), _t(d, seed=1)), {}), (ember.mul, lambda d: (_t(d), 3.0), {}),
    (ember.exp, lambda d: (_t(d),), {}), (ember.sum, lambda d: (_t(d), 1), {}),
    (ember.cumsum, lambda d: (_t(d), 0), {}), (ember.matmul, lambda d: (_t(d), _t(d, (4, 2))), {}),
    (ember.clamp, lambda d: (_t(d), 0.3, 0.6), {}), (ember.where, lambda d: (_t(d) > 0.5, _t(d), 0.0), {}),
    (ember.cat, lambda d: ([_t(d), _t(d)],), {}),
    (ember.gather, lambda d: (_t(d), 1, ember.tensor([[0], [1], [3]], device=d)), {}),
    (ember.index_select, lambda d: (_t(d), 1, ember.tensor([0, 3], device=d)), {}),
    (ember.masked_select, lambda d: (_t(d), _t(d) > 0.5), {}), (ember.amax, lambda d: (_t(d), 0), {}),
    (ember.logsumexp, lambda d: (_t(d), 1), {}), (ember.tril, lambda d: (_t(d),), {}),
    (ember.outer, lambda d: (_t(d, (3,)), _t(d, (2,))), {}), (ember.copysign, lambda d: (_t(d), -1.0), {}),
    (ember.take, lambda d: (_t(d), ember.tensor([0, 5], device=d)), {}),
]


@pytest.mark.parametrize("case", OUT, ids=[c[0].__name__ for c in OUT])
def test_out_argument(device, case):
    fn, args, kw = case
    a = args(device)
    expected = fn(*a, **kw)
    out = ember.empty(0, dtype=expected.dtype, device=device)  # resized to the result's shape
    v = out._version[0]
    r = fn(*a, **kw, out=out)
    assert r is out and out.shape == expected.shape and out._version[0] > v
    np.testing.assert_array_equal(out.numpy(force=True), expected.numpy(force=True))


def test_out_argument_tuples_and_refusals(device):
    x = _t(device)
    vals, idx = ember.empty(0, device=device), ember.empty(0, dtype=ember.int64, device=device)
    r = ember.max(x, 1, out=(vals, idx))
    assert r.values is vals and r.indices is idx and idx.tolist() == np.argmax(x.numpy(force=True), 1).tolist()
    s = ember.sort(x, 0, out=(ember.empty(0, device=device), ember.empty(0, dtype=ember.int64, device=device)))
    assert s.values.tolist() == np.sort(x.numpy(force=True), 0).tolist()
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.add(x, x, out=ember.empty(3, 4, dtype=ember.int64, device=device))
    with pytest.raises(RuntimeError, match="out="):
        ember.mul(ember.ones(2, device=device, requires_grad=True), 2.0, out=ember.empty(2, device=device))
    wide = ember.empty(3, 4, dtype=ember.float64, device=device)  # a wider out dtype is fine
    ember.add(x, 1.0, out=wide)
    np.testing.assert_allclose(wide.numpy(force=True), x.numpy(force=True) + 1.0, rtol=1e-6)


def test_copies_between_overlapping_views_are_refused(device):
    """As PyTorch: a copy between two different views of overlapping memory is refused (its result
    would depend on the copy order); disjoint views of one storage, and a tensor onto itself, copy."""
    a = ember.arange(6, dtype=ember.float32, device=device)
    with pytest.raises(RuntimeError, match="single memory location"):
        a[1:].copy_(a[:-1])
    with pytest.raises(RuntimeError, match="single memory location"):
        a[2:] = a[:4]
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    a[:3].copy_(a[3:])
    a.copy_(a)
    a[:] = a
    assert a.tolist() == [3.0, 4.0, 5.0, 3.0, 4.0, 5.0]
