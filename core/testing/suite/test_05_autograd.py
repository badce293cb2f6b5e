"""Tier 5, autograd on the device: engine behaviour, in-place rules and views."""
import pytest

import ember


def test_backward_accumulates_into_leaves(device):
    x = ember.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    (x * x).sum().backward()
    (x * 2).sum().backward()
    assert x.grad.device == device
    assert x.grad.tolist() == [4.0, 6.0, 8.0]


def test_inplace_on_view_rebases_graph(device):
    x = ember.ones(4, device=device, requires_grad=True)
    b = ember.tensor(3.0, device=device, requires_grad=True)
    y = x.clone()
    y[0] = b
    (y * ember.arange(4, dtype=ember.float32, device=device)).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert b.grad.item() == 0.0
    x.grad = None
    y = x * 2
    y[1:3].mul_(b)
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 6.0, 6.0, 2.0]


def test_modified_saved_tensor_is_refused(device):
    x = ember.ones(3, device=device, requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_leaf_inplace_refused(device):
    w = ember.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.add_(1)
    with ember.no_grad():
        w.add_(1)
    assert w.tolist() == [2.0, 2.0, 2.0]


def test_broadcast_gradients_reduce_to_input_shape(device):
    a = ember.ones(3, 1, device=device, requires_grad=True)
    b = ember.ones(4, device=device, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.shape == (3, 1) and a.grad.tolist() == [[4.0], [4.0], [4.0]]
    assert b.grad.tolist() == [3.0] * 4


def test_double_backward(device):
    x = ember.tensor([2.0], device=device, requires_grad=True)
    y = x ** 3
    (g,) = ember.autograd.grad(y.sum(), x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)
    assert abs(g.item() - 12.0) < 1e-5 and abs(gg.item() - 12.0) < 1e-5
