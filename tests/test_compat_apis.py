"""Small APIs real PyTorch programs touch (issue 21): ``range`` indices, the ``size=`` keyword of
the creation functions, ``ember.jit``, ``ember.hub``, ``ember.onnx``,
``ember.utils.tensorboard`` and the ``ember.nn.modules.<file>`` paths checkpoints name. Each test
asserts PyTorch 2.13's documented behaviour (tests/torch_oracle/test_compat_apis_oracle.py checks
the same calls side by side with torch where it is installed)."""
from __future__ import annotations

import pytest

import ember


# -- indexing with a python range: a list of ints ------------------------------------------------

def test_range_index_reads_like_a_list_of_ints():
    x = ember.arange(12).reshape(4, 3)
    assert x[range(3)].tolist() == x[[0, 1, 2]].tolist()
    assert x[range(0, 4, 2), 1].tolist() == [1, 7]
    assert x[range(2), range(2)].tolist() == [0, 4]
    assert x[range(0)].shape == (0, 3)
    assert x[:, range(1, 3)].tolist() == [[1, 2], [4, 5], [7, 8], [10, 11]]
    assert x[range(3, 0, -1)].tolist() == [[9, 10, 11], [6, 7, 8], [3, 4, 5]]


def test_range_index_writes_and_differentiates():
    y = ember.arange(12).reshape(4, 3)
    y[range(0, 4, 2), 1] = -1
    assert y[:, 1].tolist() == [-1, 4, -1, 10]
    y[range(2)] = 0
    assert y[:2].tolist() == [[0, 0, 0], [0, 0, 0]]
    w = ember.ones(4, 3, requires_grad=True)
    w[range(1, 3)].sum().backward()
    assert w.grad[:, 0].tolist() == [0.0, 1.0, 1.0, 0.0]


def test_range_index_out_of_bounds_raises_index_error():
    with pytest.raises(IndexError):
        ember.zeros(3)[range(2, 5)]


# -- the size= keyword ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["empty", "zeros", "ones", "rand", "randn"])
def test_size_keyword_of_creation_functions(name):
    fn = getattr(ember, name)
    assert fn(size=(2, 3)).shape == (2, 3)
    assert fn(size=[4]).shape == (4,)
    assert fn(size=ember.Size([1, 2])).shape == (1, 2)
    assert fn(size=()).shape == ()
    assert fn(size=(2,), dtype=ember.float64).dtype == ember.float64
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        fn(2, size=(3,))
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        fn(size=3)


def test_size_keyword_values_and_other_creation_functions():
    assert ember.zeros(size=(2,)).tolist() == [0.0, 0.0]
    assert ember.ones(size=(2,)).tolist() == [1.0, 1.0]
    assert ember.full(size=(2,), fill_value=3.0).tolist() == [3.0, 3.0]
    assert ember.randint(10, size=(5,)).shape == (5,)
    assert ember.randint(high=5, size=(3,)).shape == (3,)
    assert ember.randint(3, 10, size=(50,)).min().item() >= 3
    x = ember.ones(2, dtype=ember.float64)
    with pytest.raises(TypeError):
        ember.zeros_like(x, size=(3,))


def test_new_methods_take_size_by_keyword():
    x = ember.ones(2, dtype=ember.float64)
    z = x.new_zeros(size=(3, 1))
    assert z.shape == (3, 1) and z.dtype == ember.float64 and z.tolist() == [[0.0]] * 3
    assert x.new_ones(size=(2,)).tolist() == [1.0, 1.0]
    assert x.new_empty(size=(0, 2)).shape == (0, 2)
    assert x.new_full(size=(2,), fill_value=7).tolist() == [7.0, 7.0]
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0]
    assert x.new_zeros(2, 3).shape == (2, 3)
    with pytest.raises(TypeError, match="multiple values"):
        x.new_zeros(2, size=(3,))
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        x.new_zeros(2, foo=1)
