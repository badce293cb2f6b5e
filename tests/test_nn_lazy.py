"""Lazy modules: shapes inferred by the first forward, uninitialised parameters, state dicts."""
import copy
import pickle

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy


def test_lazy_linear_materialises_and_becomes_linear():
    m = nn.LazyLinear(3)
    assert isinstance(m.weight, UninitializedParameter) and is_lazy(m.weight) and m.has_uninitialized_params()
    assert repr(m.weight) == "<UninitializedParameter>" and m.in_features == 0
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        m.weight.shape
    assert list(m.state_dict()) == ["weight", "bias"] and is_lazy(m.state_dict()["weight"])
    ember.manual_seed(0)
    y = m(ember.ones(2, 5))
    assert type(m) is nn.Linear and type(m.weight) is nn.Parameter and m.in_features == 5
    assert tuple(y.shape) == (2, 3) and tuple(m.weight.shape) == (3, 5) and m.weight.requires_grad
    bound = 1 / np.sqrt(5)  # reset_parameters ran on the materialised weight
    assert np.abs(m.weight.detach().numpy()).max() <= bound and np.abs(m.weight.detach().numpy()).max() > 0
    y.sum().backward()
    np.testing.assert_array_equal(m.bias.grad.numpy(), [2.0, 2.0, 2.0])


def test_load_state_dict_materialises_a_lazy_module():
    src = nn.Linear(4, 2)
    m = nn.LazyLinear(2)
    m.load_state_dict(src.state_dict())
    assert type(m) is nn.LazyLinear and tuple(m.weight.shape) == (2, 4) and m.in_features == 0
    np.testing.assert_array_equal(m.weight.detach().numpy(), src.weight.detach().numpy())
    m(ember.ones(1, 4))
    assert type(m) is nn.Linear and m.in_features == 4
    np.testing.assert_array_equal(m.weight.detach().numpy(), src.weight.detach().numpy())  # not re-initialised


@pytest.mark.parametrize("cls,shape,weight", [
    (nn.LazyConv1d, (2, 3, 9), (4, 3, 3)), (nn.LazyConv2d, (3, 8, 8), (4, 3, 3, 3)),
    (nn.LazyConv3d, (1, 3, 5, 5, 5), (4, 3, 3, 3, 3)), (nn.LazyConvTranspose1d, (2, 3, 9), (3, 4, 3)),
    (nn.LazyConvTranspose2d, (1, 3, 6, 6), (3, 4, 3, 3)), (nn.LazyConvTranspose3d, (1, 3, 4, 4, 4), (3, 4, 3, 3, 3))])
def test_lazy_convolutions(cls, shape, weight):
    m = cls(4, 3)
    m(ember.ones(*shape))
    assert type(m).__name__ == cls.__name__[4:] and tuple(m.weight.shape) == weight and m.in_channels == 3
    assert tuple(m.bias.shape) == (4,)


def test_lazy_conv_errors():
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to LazyConv2d"):
        nn.LazyConv2d(4, 3)(ember.ones(5, 8))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv2d(4, 3, groups=2)(ember.ones(1, 3, 8, 8))


@pytest.mark.parametrize("cls,shape", [(nn.LazyBatchNorm1d, (4, 3)), (nn.LazyBatchNorm2d, (2, 3, 4, 4)),
                                       (nn.LazyBatchNorm3d, (2, 3, 2, 2, 2)), (nn.LazyInstanceNorm1d, (2, 3, 5)),
                                       (nn.LazyInstanceNorm2d, (2, 3, 4, 4)), (nn.LazyInstanceNorm3d, (2, 3, 2, 2, 2))])
def test_lazy_norms(cls, shape):
    m = cls()
    assert m.affine and m.track_running_stats  # the lazy norms default to both, instance norms too (as PyTorch)
    assert isinstance(m.running_mean, UninitializedBuffer)
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    x = ember.arange(float(np.prod(shape))).reshape(shape)
    m(x)
    assert type(m).__name__ == cls.__name__[4:] and m.num_features == 3
    assert type(m.running_mean) is ember.Tensor and tuple(m.running_mean.shape) == (3,)
    assert float(m.running_var.min()) > 0 and float(m.running_mean.abs().max()) > 0  # statistics updated
    # (instance norms never count batches, in PyTorch too)
    assert m.num_batches_tracked.item() == (1 if "Batch" in cls.__name__ else 0)


def test_lazy_norm_without_affine_or_stats_and_bad_input():
    m = nn.LazyBatchNorm1d(affine=False, track_running_stats=False)
    assert list(m.state_dict()) == [] and not m.has_uninitialized_params()
    with pytest.raises(ValueError, match=r"expected 4D input \(got 2D input\)"):
        nn.LazyBatchNorm2d()(ember.ones(2, 3))


def test_uninitialized_copy_and_pickle():
    m = nn.LazyLinear(3)
    for c in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert c.has_uninitialized_params() and isinstance(c.weight, UninitializedParameter)
        c(ember.ones(1, 2))
        assert tuple(c.weight.shape) == (3, 2)
    assert m.has_uninitialized_params()  # the copies did not touch the original
    p = UninitializedParameter(requires_grad=False, dtype=ember.float64)
    p.materialize((2, 2))
    assert type(p) is nn.Parameter and p.dtype == ember.float64 and not p.requires_grad
