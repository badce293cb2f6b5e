"""The engine's end-of-backward callbacks (``queue_callback``), which DDP uses to wait for its
gradient all-reduces before ``backward()`` returns."""
import pytest

import ember
from ember.autograd import engine


def test_callback_runs_after_every_gradient_is_accumulated():
    a = ember.ones(3, requires_grad=True)
    b = ember.ones(3, requires_grad=True)
    seen = []

    def hook(t):
        seen.append("hook")
        engine.queue_callback(lambda: seen.append(("callback", a.grad is not None, b.grad is not None)))

    a.register_post_accumulate_grad_hook(hook)
    (a * 2 + b * 3).sum().backward()
    assert seen == ["hook", ("callback", True, True)]
    assert a.grad.tolist() == [2.0, 2.0, 2.0]


def test_callbacks_run_in_order_and_may_queue_more():
    x = ember.ones(2, requires_grad=True)
    order = []

    def second():
        order.append(2)
        engine.queue_callback(lambda: order.append(3))

    def hook(g):
        engine.queue_callback(lambda: order.append(1))
        engine.queue_callback(second)

    x.register_hook(hook)
    x.sum().backward()
    assert order == [1, 2, 3]


def test_callbacks_belong_to_one_pass():
    x = ember.ones(2, requires_grad=True)
    calls = []
    handle = x.register_hook(lambda g: engine.queue_callback(lambda: calls.append(1)))
    x.sum().backward()
    handle.remove()
    x.sum().backward()  # no hook now: nothing left over from the first pass runs
    assert calls == [1]


def test_queue_callback_outside_backward_raises():
    with pytest.raises(RuntimeError, match="during backward pass"):
        engine.queue_callback(lambda: None)


def test_pytorch_spelling():
    x = ember.ones(2, requires_grad=True)
    hit = []
    x.register_hook(lambda g: ember.autograd.Variable._execution_engine.queue_callback(lambda: hit.append(True)))
    (x * x).sum().backward()
    assert hit == [True]


def test_failed_backward_drops_its_callbacks():
    x = ember.ones(2, requires_grad=True)
    ran = []

    def hook(g):
        engine.queue_callback(lambda: ran.append(True))
        raise ValueError("hook failed")

    x.register_hook(hook)
    with pytest.raises(ValueError, match="hook failed"):
        x.sum().backward()
    assert ran == [] and engine._callbacks.stack == []


def test_autograd_grad_also_runs_callbacks():
    x = ember.ones(2, requires_grad=True)
    ran = []
    y = x * 3
    y.register_hook(lambda g: engine.queue_callback(lambda: ran.append(True)))
    (g,) = ember.autograd.grad(y.sum(), x)
    assert ran == [True] and g.tolist() == [3.0, 3.0]
