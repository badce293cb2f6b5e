"""Training capture (``ember.compiler._train``): a compiled call under autograd replays its forward
and hangs one node on its outputs, whose backward replays a captured backward program. Gradients
and whole training runs must equal eager ones exactly in float64."""
import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F


def _same(a, b):
    return np.array_equal(a.detach().numpy(), b.detach().numpy())


def _compiled_fn(om):
    return om.__dict__["_compiled"]


def _train(model, steps, compiled, seed=0, opt=ember.optim.AdamW):
    ember.manual_seed(seed)
    run = ember.compile(model) if compiled else model
    o = opt(model.parameters(), lr=1e-2)
    g = ember.Generator().manual_seed(7)
    losses = []
    for _ in range(steps):
        x = ember.randn(6, 1, 8, 8, generator=g, dtype=ember.float64)
        y = ember.randint(0, 5, (6,), generator=g)
        o.zero_grad()
        loss = F.cross_entropy(run(x), y)
        loss.backward()
        o.step()
        losses.append(loss.item())
    return losses, run


def _cnn():
    ember.manual_seed(3)
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Dropout(0.3), nn.Linear(36, 5)).double()


def test_training_run_equals_eager_exactly_in_float64():
    eager, compiled = _cnn(), _cnn()
    le, _ = _train(eager, 4, False)
    lc, run = _train(compiled, 4, True)
    assert le == lc
    for a, b in zip(eager.state_dict().values(), compiled.state_dict().values()):
        assert _same(a, b)
    cf = _compiled_fn(run)
    (prog,) = cf.programs()
    assert not cf.breaks and len(prog.backwards) == 1


def test_replayed_output_has_one_node_to_the_parameters():
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    cm = ember.compile(m)
    x = ember.randn(5, 3)
    cm(x)
    y = cm(x)
    assert y.grad_fn.name() == "CompiledFunctionBackward"
    leaves = {id(fn.variable) for fn, _ in y.grad_fn.next_functions}
    assert leaves == {id(p) for p in m.parameters()}


def test_input_gradients_and_unused_outputs():
    ember.manual_seed(0)
    lstm = nn.LSTM(4, 3, batch_first=True).double()
    clstm = ember.compile(lstm)
    for i in range(3):
        x = ember.randn(2, 5, 4, dtype=ember.float64, requires_grad=True)
        xc = x.detach().clone().requires_grad_(True)
        out, (h, c) = lstm(x)
        ge = ember.autograd.grad((out * out).sum() if i != 1 else h.sum(), [x] + list(lstm.parameters()))
        outc, (hc, cc) = clstm(xc)
        gc = ember.autograd.grad((outc * outc).sum() if i != 1 else hc.sum(), [xc] + list(lstm.parameters()))
        assert _same(out, outc) and _same(c, cc)
        assert all(_same(a, b) for a, b in zip(ge, gc))
    (prog,) = _compiled_fn(clstm).programs()
    assert len(prog.backwards) == 3  # the probe (every output), out alone, h alone


def test_compiled_loss_function_and_parameter_views():
    ember.manual_seed(1)
    mha = nn.MultiheadAttention(8, 2, batch_first=True).double()  # chunks of in_proj_weight inside

    def step(q, t):
        return F.mse_loss(mha(q, q, q)[0], t)
    cstep = ember.compile(step)
    for _ in range(3):
        q, t = ember.randn(2, 4, 8, dtype=ember.float64), ember.randn(2, 4, 8, dtype=ember.float64)
        ge = ember.autograd.grad(step(q, t), list(mha.parameters()))
        gc = ember.autograd.grad(cstep(q, t), list(mha.parameters()))
        assert all(_same(a, b) for a, b in zip(ge, gc))
    assert len(cstep.programs()) == 1 and not cstep.breaks


def test_double_backward_and_second_backward_raise():
    lin = nn.Linear(3, 2)
    cm = ember.compile(lin)
    x = ember.randn(4, 3)
    cm(x)
    y = cm(x).sum()
    with pytest.raises(RuntimeError, match="double backward"):
        ember.autograd.grad(y, lin.weight, create_graph=True)
    y = cm(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_retain_graph_and_two_calls_before_backward():
    m = nn.Sequential(nn.Linear(3, 3), nn.Sigmoid()).double()
    cm = ember.compile(m)
    a, b = ember.randn(2, 3, dtype=ember.float64), ember.randn(2, 3, dtype=ember.float64)
    cm(a)
    ya, yb = cm(a), cm(b)  # two replays alive at once: no buffer is shared between them
    ga = ember.autograd.grad(ya.sum(), m[0].weight, retain_graph=True)[0]
    gb = ember.autograd.grad(yb.sum(), m[0].weight)[0]
    m2 = copy.deepcopy(m)
    assert _same(ga, ember.autograd.grad(m2(a).sum(), m2[0].weight)[0])
    assert _same(gb, ember.autograd.grad(m2(b).sum(), m2[0].weight)[0])
    assert _same(ga, ember.autograd.grad(ya.sum(), m[0].weight)[0])


def test_in_place_change_of_a_saved_tensor_is_detected_as_in_eager():
    lin = nn.Linear(3, 2)
    cf = ember.compile(lambda x: ember.tanh(lin(x)))
    x = ember.randn(4, 3)
    cf(x)
    y = cf(x)
    y.add_(1)  # tanh's backward reads its output
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    y = cf(x)
    x.add_(1)  # x is saved by the linear layer for the weight's gradient
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    z = ember.randn(4, 3)
    y = cf(z)
    ember.compile(lambda t: t * 2)(ember.ones(2))  # an unrelated write elsewhere is no error
    y.sum().backward()
