"""Linear algebra, views, splits and indexing against PyTorch's results (checked with torch 2.13,
found by the PyTorch-oracle tier): the addmm family in one dtype, addr's promotion, einsum's
outer products, matrix_power, block_diag's dtype, the split family and rot90 of 0-d tensors,
adjoint, view(), the backward of unfold, as_strided and index_reduce, index_select of a scalar,
fills of expanded tensors, bucketize of mixed dtypes, concatenate and cat of empty tensors."""
import math
import warnings

import numpy as np
import pytest

import ember

nan, inf = math.nan, math.inf
u8, i8 = ember.uint8, ember.int8


def _t(v, dtype=ember.float64, **kw):
    return ember.tensor(v, dtype=dtype, **kw)


# -- the addmm family: one dtype, alpha/beta converted to it -------------------------------------

@pytest.mark.parametrize("f", [
    lambda a: ember.addmm(a(2, 2), a(2, 2), a(2, 2), beta=0, alpha=0.0),
    lambda a: ember.addmv(a(2), a(2, 2), a(2), beta=0, alpha=0.0),
    lambda a: ember.baddbmm(a(1, 2, 2), a(1, 2, 2), a(1, 2, 2), beta=0, alpha=0.0),
    lambda a: ember.addbmm(a(2, 2), a(1, 2, 2), a(1, 2, 2)),
])
def test_addmm_family_keeps_an_integer_dtype(f):
    r = f(lambda *s: ember.ones(*s, dtype=u8))
    assert r.dtype == u8


def test_addmm_family_values():
    one = ember.ones(2, 2, dtype=u8)
    assert ember.addmm(one, one, one, beta=1.5, alpha=1).tolist() == [[3, 3], [3, 3]]  # beta truncated to 1
    assert ember.addbmm(one, one[None], one[None]).tolist() == [[3, 3], [3, 3]]
    assert ember.addmv(_t(1, u8), one, ember.ones(2, dtype=u8)).tolist() == [3, 3]


@pytest.mark.parametrize("f", [
    lambda: ember.addmm(ember.ones(2, 2, dtype=i8), ember.ones(2, 2, dtype=u8), ember.ones(2, 2, dtype=u8)),
    lambda: ember.baddbmm(ember.ones(1, 2, 2, dtype=u8), ember.ones(1, 2, 2, dtype=i8), ember.ones(1, 2, 2, dtype=i8)),
    lambda: ember.addbmm(ember.ones(2, 2, dtype=u8), ember.ones(1, 2, 2, dtype=u8), ember.ones(1, 2, 2, dtype=i8)),
    lambda: ember.addmv(ember.ones(2, dtype=i8), ember.ones(2, 2, dtype=u8), ember.ones(2, dtype=u8)),
    lambda: ember.addmv(ember.ones(2, dtype=u8), ember.ones(2, 2, dtype=u8), ember.ones(2, dtype=u8), beta=-1.0),
    lambda: ember.addbmm(ember.ones(2, 2, dtype=u8), ember.ones(1, 2, 2, dtype=u8), ember.ones(1, 2, 2, dtype=u8),
                         alpha=-1.0),
    lambda: ember.addmv(ember.ones(2, 2), ember.ones(2, 2), ember.ones(2)),
    lambda: ember.addmv(ember.ones(3), ember.ones(2, 2), ember.ones(2)),
    lambda: ember.addmm(ember.ones(3), ember.ones(2, 2), ember.ones(2, 2)),
])
def test_addmm_family_refusals(f):
    with pytest.raises(RuntimeError):
        f()


def test_addmm_beta_zero_ignores_nan_and_keeps_a_zero_gradient():
    x = _t([[1.0, nan]], requires_grad=True)
    r = ember.addmm(x, _t([[2.0]]), _t([[3.0, 4.0]]), beta=0, alpha=2)
    assert r.tolist() == [[12.0, 16.0]] and r.requires_grad
    r.sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0]]


def test_addr_promotes_all_three_before_the_product():
    r = ember.addr(ember.ones(2, 2, dtype=i8), ember.ones(2, dtype=u8), ember.ones(2, dtype=u8), beta=0, alpha=0)
    assert r.dtype == ember.int16 and r.tolist() == [[0, 0], [0, 0]]
    # the vectors are cast to float16 first: -2**31 becomes -inf there, and 0 * -inf is NaN
    r = ember.addr(_t([[0.0]], ember.float16), _t([0], u8), _t([-2**31], ember.int32))
    assert r.dtype == ember.float16 and math.isnan(r.item())
    r = ember.addr(ember.ones(2, 2, dtype=ember.int64), ember.ones(2), ember.ones(2), alpha=1.5)
    assert r.dtype == ember.float32 and r.tolist() == [[2.5, 2.5], [2.5, 2.5]]


def test_addr_of_integers_refuses_float_scalars_and_computes_bool():
    one = ember.ones(2, dtype=u8)
    for kw in ({"alpha": 0.0}, {"beta": 0.0}):
        with pytest.raises(RuntimeError, match="must not be a floating point"):
            ember.addr(ember.ones(2, 2, dtype=u8), one, one, **kw)
    b = ember.ones(2, dtype=ember.bool)
    assert ember.addr(ember.ones(2, 2, dtype=ember.bool), b, b, beta=0, alpha=2).tolist() == [[True, True]] * 2
    with pytest.raises(RuntimeError, match="Expected 1-D argument vec1"):
        ember.addr(ember.ones(2, 2), ember.ones(2, 2), ember.ones(2))


def test_einsum_outer_product_promotes():
    r = ember.einsum("i,j->ij", ember.ones(2, dtype=ember.float16), ember.ones(3, dtype=ember.bfloat16))
    assert r.dtype == ember.float32 and r.shape == (2, 3)
    r = ember.einsum("bi,j->bij", ember.arange(4.0).reshape(2, 2), ember.arange(3.0))
    assert r.tolist() == [[[0, 0, 0], [0, 1, 2]], [[0, 2, 4], [0, 3, 6]]]
    with pytest.raises(RuntimeError):  # a contraction needs one dtype
        ember.einsum("ij,jk->ik", ember.ones(2, 2, dtype=ember.float16), ember.ones(2, 3))


def test_matrix_power():
    a = _t([[0.0, 0.0], [1.0, inf]], ember.float16)
    assert np.isnan(np.array(ember.matrix_power(a, 3).tolist())).all()  # (a @ a) @ a, as PyTorch
    x = _t([[inf, 2.0], [3.0, 4.0]], requires_grad=True)
    r = ember.matrix_power(x, 0)
    assert r.tolist() == [[1.0, 0.0], [0.0, 1.0]] and r.requires_grad
    r.sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    m = _t([[2.0, 1.0], [1.0, 3.0]])
    expected = np.linalg.matrix_power([[2.0, 1.0], [1.0, 3.0]], -2)
    assert np.allclose(np.array(ember.matrix_power(m, -2).tolist()), expected)


def test_block_diag_dtype_counts_0d_tensors_less():
    r = ember.block_diag(_t(0, u8), ember.zeros(0, dtype=i8))
    assert r.dtype == i8 and r.shape == (2, 1)
    with pytest.raises(RuntimeError, match="2 or fewer dimensions"):
        ember.block_diag(ember.ones(1, 1, 1))


# -- views and splits ---------------------------------------------------------------------------

def test_adjoint():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = ember.adjoint(_t(2.0))
    assert r.shape == () and r.item() == 2.0
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        ember.adjoint(ember.ones(2))


@pytest.mark.parametrize("f", [
    lambda x: ember.split(x, 1), lambda x: ember.split_with_sizes(x, [1, 2]), lambda x: ember.tensor_split(x, 1),
    lambda x: ember.hsplit(x, 1), lambda x: ember.vsplit(x, 1), lambda x: ember.dsplit(x, 1),
    lambda x: ember.rot90(x, 0, (0, 1)),
])
def test_0d_tensors_cannot_be_split_or_rotated(f):
    with pytest.raises(RuntimeError):
        f(_t(False, ember.bool))


@pytest.mark.parametrize("f", [
    lambda: ember.vsplit(ember.ones(0), 1),              # needs 2 dims
    lambda: ember.dsplit(ember.ones(2, 2), 1),           # needs 3 dims
    lambda: ember.hsplit(ember.ones(3), 2),              # 3 is not divisible by 2
    lambda: ember.hsplit(ember.ones(3, 3), 2),
    lambda: ember.dsplit(ember.ones(0, 0, 1), 2),
    lambda: ember.hsplit(ember.ones(0), 0),
    lambda: ember.rot90(ember.ones(2), 1, (0, 1)),       # needs 2 dims
])
def test_split_refusals(f):
    with pytest.raises(RuntimeError):
        f()


def test_splits_that_work():
    assert [t.shape for t in ember.vsplit(ember.ones(0, 2), 2)] == [(0, 2), (0, 2)]
    assert [t.shape for t in ember.hsplit(ember.ones(3), [1])] == [(1,), (2,)]
    assert [t.shape for t in ember.dsplit(ember.ones(2, 2, 4), (1, 3))] == [(2, 2, 1), (2, 2, 2), (2, 2, 1)]


def test_view_needs_a_shape():
    with pytest.raises(TypeError):
        ember.ones(1).view()
    assert ember.ones(1).view(()).shape == ()


@pytest.mark.parametrize("size, want", [(1, 1.0), (0, 0.0)])
def test_unfold_backward_of_a_0d_tensor(size, want):
    x = _t(3.0, requires_grad=True)
    x.unfold(0, size, 1).sum().backward()
    assert x.grad.item() == want


def test_as_strided_backward_adds_up_overlapping_elements():
    x = _t([0.0], requires_grad=True)
    (ember.as_strided(x, (2,), (0,), 0) * _t([2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [5.0]
    x = ember.arange(6.0, dtype=ember.float64).requires_grad_()
    (x.as_strided((3, 3), (1, 1), 1) * ember.arange(9.0, dtype=ember.float64).reshape(3, 3)).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 4.0, 12.0, 12.0, 8.0]


# -- indexing -------------------------------------------------------------------------------------

def test_index_select_of_a_scalar():
    x = _t(5.0)
    assert ember.index_select(x, 0, ember.tensor([0])).shape == ()
    assert ember.index_select(x, -1, ember.tensor(0)).item() == 5.0
    for idx in ([], [0, 0]):
        with pytest.raises(RuntimeError, match="Index to scalar can have only 1 value"):
            ember.index_select(x, 0, ember.tensor(idx, dtype=ember.int64))
    with pytest.raises(IndexError):
        ember.index_select(x, 1, ember.tensor([0]))


@pytest.mark.parametrize("n", [0, 2])
def test_index_reduce_prod_backward(n):
    x = ember.ones(n, dtype=ember.float64, requires_grad=True)
    s = ember.full((n,), 2.0, dtype=ember.float64, requires_grad=True)
    ember.index_reduce(x, 0, ember.arange(n), s, "prod", include_self=True).sum().backward()
    assert x.grad.tolist() == [2.0] * n and s.grad.tolist() == [1.0] * n
    x = ember.zeros(0, dtype=ember.float64, requires_grad=True)
    ember.index_reduce(x, 0, ember.arange(0), x.detach().clone(), "prod", include_self=False).sum().backward()
    assert x.grad.shape == (0,)


def test_prod_backward_of_an_empty_tensor():
    x = ember.zeros(0, 3, dtype=ember.float64, requires_grad=True)
    x.prod(0).sum().backward()
    assert x.grad.shape == (0, 3)


def test_fills_of_expanded_and_empty_tensors():
    x = ember.zeros(1, dtype=ember.bool).expand(2).fill_(True)
    assert x.tolist() == [True, True]
    assert ember.zeros(1).expand(3).zero_().tolist() == [0.0, 0.0, 0.0]
    assert ember.zeros(2, 1).expand(2, 0).uniform_().shape == (2, 0)
    assert ember.zeros(2, 1).expand(2, 0).add_(1).shape == (2, 0)
    with pytest.raises(RuntimeError, match="single memory location"):
        ember.zeros(1).expand(2).fill_(ember.tensor(2.0))  # a tensor value is copied
    with pytest.raises(RuntimeError, match="single memory location"):
        ember.zeros(1).expand(2).uniform_()


def test_bucketize_compares_in_the_promoted_dtype():
    assert ember.bucketize(_t([-128], i8), _t([0], u8)).tolist() == [0]
    assert ember.bucketize(_t([0.5], ember.float32), _t([0, 1], i8)).tolist() == [1]
    assert ember.searchsorted(_t([[0, 1]], i8), _t([[0.5, -3.0]], ember.float32)).tolist() == [[1, 0]]
    # a 0-d input counts less in PyTorch's promotion: 255 is compared as int8 (-1)
    assert ember.bucketize(_t(255, u8), _t([0], i8)).item() == 0


def test_concatenate_takes_dim_or_axis():
    a, b = ember.zeros(2, 2), ember.ones(2, 1)
    assert ember.concatenate([a, b], dim=1).shape == (2, 3)
    assert ember.concatenate([a, b], axis=1).shape == (2, 3)
    assert ember.concatenate([a, b], 1).shape == (2, 3)
    with pytest.raises(ValueError):
        ember.concatenate([], dim=0)


def test_cat_keeps_the_history_of_empty_tensors():
    e = ember.zeros(0, dtype=ember.float64, requires_grad=True)
    r = ember.cat([ember.zeros(0, dtype=ember.bool), e])
    assert r.requires_grad and r.dtype == ember.float64 and r.shape == (0,)
    r = ember.cat([e, _t([[1.0], [2.0]], ember.float32)], 1)
    assert r.requires_grad and r.dtype == ember.float64 and r.tolist() == [[1.0], [2.0]]
    r.sum().backward()
    assert e.grad.shape == (0,)
