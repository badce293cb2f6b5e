"""Tensor basics: construction, conversions, legacy API, repr, numpy sharing, errors."""
import numpy as np
import pytest

import ember


def test_legacy_constructors_and_type_strings():
    t = ember.FloatTensor(3, 3)
    assert t.shape == (3, 3) and t.dtype is ember.float32
    l = ember.LongTensor([1, 2])
    assert l.dtype is ember.int64 and l.tolist() == [1, 2]
    assert t.type() == "ember.FloatTensor" and l.type() == "ember.LongTensor"
    assert isinstance(t, ember.FloatTensor) and not isinstance(l, ember.FloatTensor)
    assert ember.Tensor(2, 3).dtype is ember.float32
    assert ember.Tensor([1, 2]).tolist() == [1.0, 2.0]
    assert ember.tensor([1.0]).type("ember.DoubleTensor").dtype is ember.float64
    assert ember.tensor([1.0]).type(ember.int32).dtype is ember.int32
    assert ember.cuda.FloatTensor.__name__ == "FloatTensor"


def test_conversions():
    x = ember.tensor([1.6, -2.4])
    assert x.long().tolist() == [1, -2] and x.int().dtype is ember.int32
    assert x.double().dtype is ember.float64 and x.half().dtype is ember.float16 and x.bool().tolist() == [True, True]
    assert x.to(ember.float64).dtype is ember.float64 and x.to("cpu") is x
    assert x.to(ember.float32) is x and x.to(ember.float32, copy=True) is not x
    assert x.cpu() is x and not x.is_cuda and x.device == ember.device("cpu")
    assert ember.tensor(2.5).item() == 2.5 and isinstance(ember.tensor(3).item(), int)
    assert float(ember.tensor([1.5])) == 1.5 and int(ember.tensor(7)) == 7
    assert ember.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]


def test_numpy_shares_memory_both_ways():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ember.from_numpy(a)
    a[0, 0] = 100
    assert t[0, 0].item() == 100
    t[1, 2] = -1
    assert a[1, 2] == -1
    n = t.numpy()
    n[0, 1] = 42
    assert t[0, 1].item() == 42
    s = ember.from_numpy(np.arange(10)[::2])
    assert s.tolist() == [0, 2, 4, 6, 8] and s.stride() == (2,)
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(np.arange(4)[::-1])


def test_numpy_refuses_grad_and_as_tensor_shares():
    w = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Use tensor.detach\(\).numpy\(\) instead"):
        w.numpy()
    a = np.zeros(3)
    t = ember.as_tensor(a)
    a[0] = 5
    assert t[0].item() == 5
    c = ember.tensor(a)
    a[1] = 7
    assert c[1].item() == 0


def test_clone_detach_copy_and_new():
    x = ember.arange(4, dtype=ember.float32)
    c = x.clone()
    c[0] = 9
    assert x[0].item() == 0
    d = x.detach()
    d[1] = 8
    assert x[1].item() == 8 and d._version is x._version
    y = ember.zeros(4, dtype=ember.int32)
    y.copy_(ember.tensor([1.9, 2.1, 3.5, 4.0]))
    assert y.dtype is ember.int32 and y.tolist() == [1, 2, 3, 4]
    n = y.new_zeros(2, 2)
    assert n.dtype is ember.int32 and n.shape == (2, 2)
    assert y.new_ones((3,)).tolist() == [1, 1, 1] and y.new_full((2,), 7).tolist() == [7, 7]
    assert y.new_tensor([1.5]).dtype is ember.int32 and y.new_empty(5).shape == (5,)


def test_metadata():
    x = ember.zeros(2, 3, 4)
    assert x.size() == (2, 3, 4) and x.size(-1) == 4 and x.stride() == (12, 4, 1) and x.dim() == 3
    assert x.numel() == 24 and x.element_size() == 4 and x.nbytes == 96 and x.ndim == 3
    assert repr(x.shape) == "ember.Size([2, 3, 4])"
    v = x[1, 1:]
    assert v.storage_offset() == 16 and v.data_ptr() == x.data_ptr() + 16 * 4
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.size(3)


def test_repr_like_pytorch():
    assert repr(ember.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(ember.tensor([1, 2, 3])) == "tensor([1, 2, 3])"
    assert repr(ember.tensor([0.5, 2.0], dtype=ember.float64)) == "tensor([0.5000, 2.0000], dtype=ember.float64)"
    assert repr(ember.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    y = ember.tensor([1.0], requires_grad=True) * 2
    assert repr(y) == "tensor([2.], grad_fn=<MulBackward0>)"
    assert repr(ember.tensor(3.25)) == "tensor(3.2500)"
    assert repr(ember.tensor([[1.0, 2.0], [3.0, 4.0]])) == "tensor([[1., 2.],\n        [3., 4.]])"
    assert repr(ember.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(ember.tensor([True, False])) == "tensor([ True, False])"
    assert "..." in repr(ember.arange(5000))


def test_bool_len_iter_and_errors():
    assert len(ember.zeros(5, 2)) == 5
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ember.tensor(1.0))
    assert [t.item() for t in ember.tensor([1, 2])] == [1, 2]
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        bool(ember.ones(2))
    assert bool(ember.tensor([3]))
    assert 2 in ember.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="elements cannot be converted to Scalar"):
        ember.ones(3).item()


def test_tensor_from_nested_data_errors():
    with pytest.raises(ValueError):
        ember.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        ember.tensor(["a"])
    assert ember.tensor([ember.tensor(1.0), ember.tensor(2.0)]).tolist() == [1.0, 2.0]
    assert ember.tensor([]).shape == (0,) and ember.tensor([]).dtype is ember.float32


def test_creation_ops_dtype_and_device_args():
    assert ember.zeros((2, 3), dtype=ember.int16).dtype is ember.int16
    assert ember.ones(2, device="cpu").device.type == "cpu"
    assert ember.full((2,), 3).dtype is ember.int64 and ember.full((2,), True).dtype is ember.bool
    assert ember.arange(5).dtype is ember.int64 and ember.arange(0, 1, 0.25).tolist() == [0, 0.25, 0.5, 0.75]
    assert ember.linspace(0, 1, 3).tolist() == [0, 0.5, 1]
    assert ember.eye(2).tolist() == [[1, 0], [0, 1]]
    assert ember.empty_like(ember.ones(2, dtype=ember.int8)).dtype is ember.int8
    assert ember.zeros_like(ember.ones(2), dtype=ember.float64).dtype is ember.float64
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.zeros(-1)
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"):
        ember.zeros(2, dtype=ember.int64, requires_grad=True)


def test_random_creation():
    ember.manual_seed(0)
    a = ember.rand(3, 4)
    ember.manual_seed(0)
    assert ember.rand(3, 4).tolist() == a.tolist()
    b = ember.bernoulli(ember.full((1000,), 0.3))
    assert 0.2 < b.mean().item() < 0.4
    m = ember.multinomial(ember.tensor([0.0, 1.0, 3.0]), 200, replacement=True)
    assert set(m.tolist()) <= {1, 2} and (m == 2).sum().item() > 100
    m2 = ember.multinomial(ember.tensor([1.0, 1.0, 1.0, 1.0]), 4)
    assert sorted(m2.tolist()) == [0, 1, 2, 3]
    n = ember.normal(ember.zeros(1000), ember.ones(1000) * 2)
    assert 1.7 < n.std().item() < 2.3
    x = ember.empty(1000).uniform_(-1, 1)
    assert -1 <= x.min().item() and x.max().item() < 1
    assert ember.randint(5, (3,)).max().item() < 5 and ember.randn(2, 2, dtype=ember.float64).dtype is ember.float64


def test_mixed_device_error_names_both(prim_backend):
    a = ember.ones(2)
    b = ember.ones(2, device="prim")
    with pytest.raises(RuntimeError, match="cpu and prim:0|prim:0 and cpu"):
        a + b
    assert (ember.tensor(2.0) * b).device.type == "prim"  # a cpu 0-d tensor goes along
    assert (b.cpu() + a).tolist() == [2.0, 2.0]


def test_pickle_and_deepcopy_keep_shape_dtype_and_grad():
    import copy
    import pickle
    for t in (ember.tensor(3.0), ember.arange(6).view(2, 3).t(), ember.tensor([1.5], dtype=ember.bfloat16)):
        r = pickle.loads(pickle.dumps(t))
        assert r.shape == t.shape and r.dtype is t.dtype and r.tolist() == t.tolist()
    w = ember.ones(2, requires_grad=True)
    assert pickle.loads(pickle.dumps(w)).requires_grad
    c = copy.deepcopy(w)
    assert c.requires_grad and c.untyped_storage() is not w.untyped_storage() and c.tolist() == w.tolist()
