"""ember.compile of a whole training step: forward, ``loss.backward()`` and the optimizer step in
one compiled function become one replayed program (docs/compile.md, "Training steps").

Each test runs the same step eagerly on a copy of the model and compares in float64, where the
replay makes the eager kernel calls and so must match bit for bit."""
from __future__ import annotations

import copy

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F


def _model(seed=0, bn=False, dropout=False):
    ember.manual_seed(seed)
    layers = [nn.Linear(4, 8)]
    if bn:
        layers.append(nn.BatchNorm1d(8))
    layers.append(nn.Tanh())
    if dropout:
        layers.append(nn.Dropout(0.3))
    layers.append(nn.Linear(8, 3))
    return nn.Sequential(*layers).double()


def _data(n, seed=1):
    g = ember.Generator().manual_seed(seed)
    return [(ember.randn(5, 4, dtype=ember.float64, generator=g), ember.randint(0, 3, (5,), generator=g))
            for _ in range(n)]


def _step(model, opt, x, y):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def _same_params(a, b):
    for p, q in zip(a.parameters(), b.parameters()):
        assert ember.equal(p, q)
        assert (p.grad is None) == (q.grad is None)
        if p.grad is not None:
            assert ember.equal(p.grad, q.grad)
    for p, q in zip(a.buffers(), b.buffers()):
        assert ember.equal(p, q)


@pytest.mark.parametrize("make_opt", [
    lambda ps: ember.optim.SGD(ps, lr=0.1),
    lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
    lambda ps: ember.optim.Adam(ps, lr=1e-2),
    lambda ps: ember.optim.AdamW(ps, lr=1e-2, amsgrad=True),
    lambda ps: ember.optim.RMSprop(ps, lr=1e-2, momentum=0.5),
    lambda ps: ember.optim.Adadelta(ps),
    lambda ps: ember.optim.Rprop(ps),
], ids=["sgd", "sgd-nesterov", "adam", "adamw-amsgrad", "rmsprop", "adadelta", "rprop"])
def test_whole_step_replays_and_matches_eager(make_opt):
    model = _model(bn=True)
    ref = copy.deepcopy(model)
    opt, ropt = make_opt(model.parameters()), make_opt(ref.parameters())
    cstep = ember.compile(_step)
    for x, y in _data(6):
        a, b = cstep(model, opt, x, y), _step(ref, ropt, x, y)
        assert ember.equal(a, b)
        _same_params(model, ref)
    # the first call creates the optimizer's state (run eagerly, captured again next time), the
    # second captures, the rest replay one program
    assert len(cstep.programs()) == 1 and not cstep.breaks
    assert "set_grad" in cstep.programs()[0].source
    for a, b in zip(opt.state.values(), ropt.state.values()):
        assert a.keys() == b.keys() and all(ember.equal(a[k], b[k]) for k in a)


def test_an_optimizer_reading_its_step_count_on_the_host_runs_eagerly():
    model = _model()
    ref = copy.deepcopy(model)
    opt, ropt = ember.optim.NAdam(model.parameters()), ember.optim.NAdam(ref.parameters())
    cstep = ember.compile(_step)
    for x, y in _data(4):
        assert ember.equal(cstep(model, opt, x, y), _step(ref, ropt, x, y))
    _same_params(model, ref)
    assert not cstep.programs() and "host read" in cstep.breaks[0].reason


def test_replayed_output_has_no_history_and_loss_item_works():
    model = _model()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    cstep = ember.compile(_step)
    losses = [cstep(model, opt, x, y) for x, y in _data(4)]
    assert all(isinstance(v.item(), float) for v in losses)
    assert losses[-1].grad_fn is None and not losses[-1].requires_grad


def test_dropout_draws_match_eager():
    model = _model(dropout=True)
    ref = copy.deepcopy(model)
    opt, ropt = ember.optim.Adam(model.parameters()), ember.optim.Adam(ref.parameters())
    cstep = ember.compile(_step)
    for i, (x, y) in enumerate(_data(5)):
        ember.manual_seed(100 + i)
        a = cstep(model, opt, x, y)
        ember.manual_seed(100 + i)
        b = _step(ref, ropt, x, y)
        assert ember.equal(a, b)
    _same_params(model, ref)
    assert len(cstep.programs()) == 1


def test_zero_grad_outside_and_accumulation_across_calls():
    model = _model()
    ref = copy.deepcopy(model)

    def fwd_bwd(m, x, y):
        F.cross_entropy(m(x), y).backward()

    cf = ember.compile(fwd_bwd)
    data = _data(6)
    # gradients accumulate over two calls, then the parameters are zeroed outside
    for i, (x, y) in enumerate(data):
        cf(model, x, y)
        fwd_bwd(ref, x, y)
        _same_params(model, ref)
        if i % 2:
            model.zero_grad()
            ref.zero_grad()
    # two programs: one for "no gradient yet", one for "accumulate into the existing one"
    assert len(cf.programs()) == 2 and not cf.breaks


def test_zero_grad_without_set_to_none_keeps_the_gradient_tensors():
    model = _model()
    ref = copy.deepcopy(model)
    opt, ropt = ember.optim.SGD(model.parameters(), lr=0.1), ember.optim.SGD(ref.parameters(), lr=0.1)

    def step(m, o, x, y):
        o.zero_grad(set_to_none=False)
        F.cross_entropy(m(x), y).backward()
        o.step()

    cstep = ember.compile(step)
    for x, y in _data(5):
        cstep(model, opt, x, y)
        step(ref, ropt, x, y)
        _same_params(model, ref)
    grads = [p.grad for p in model.parameters()]
    cstep(model, opt, *_data(1, seed=9)[0])
    assert all(p.grad is g for p, g in zip(model.parameters(), grads))


def test_changed_learning_rate_captures_again():
    model = _model()
    ref = copy.deepcopy(model)
    opt, ropt = ember.optim.SGD(model.parameters(), lr=0.1), ember.optim.SGD(ref.parameters(), lr=0.1)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    rsched = ember.optim.lr_scheduler.StepLR(ropt, step_size=2, gamma=0.5)
    cstep = ember.compile(_step)
    for x, y in _data(6):
        cstep(model, opt, x, y)
        _step(ref, ropt, x, y)
        sched.step()
        rsched.step()
        _same_params(model, ref)
    assert len(cstep.programs()) >= 2


def test_loaded_optimizer_state_is_used():
    model = _model()
    ref = copy.deepcopy(model)
    opt, ropt = ember.optim.Adam(model.parameters()), ember.optim.Adam(ref.parameters())
    cstep = ember.compile(_step)
    data = _data(6)
    for x, y in data[:3]:
        cstep(model, opt, x, y)
        _step(ref, ropt, x, y)
    saved = copy.deepcopy(ropt.state_dict())
    opt.load_state_dict(saved)   # new state tensors (same values): the old program must not write the old ones
    ropt.load_state_dict(saved)
    for x, y in data[3:]:
        cstep(model, opt, x, y)
        _step(ref, ropt, x, y)
        _same_params(model, ref)
    for a, b in zip(opt.state.values(), ropt.state.values()):
        assert ember.equal(a["exp_avg"], b["exp_avg"]) and ember.equal(a["step"], b["step"])


def test_retain_graph_hooks_and_closures_run_eagerly():
    model = _model()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)

    def retained(m, x, y):
        loss = F.cross_entropy(m(x), y)
        loss.backward(retain_graph=True)
        return loss

    def closure_step(m, o, x, y):
        def closure():
            o.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            return loss
        return o.step(closure)

    (x, y), = _data(1)
    for fn, args, why in ((retained, (model, x, y), "retain_graph"),
                          (closure_step, (model, opt, x, y), "closure")):
        cf = ember.compile(fn)
        for _ in range(3):
            cf(*args)
        assert not cf.programs() and why in cf.breaks[0].reason, cf.breaks

    h = model[0].weight.register_hook(lambda g: g * 2)
    cstep = ember.compile(_step)
    for _ in range(3):
        cstep(model, opt, x, y)
    assert not cstep.programs() and "hook" in cstep.breaks[0].reason
    h.remove()

    with pytest.raises(ember.compiler.Unsupported, match="retain_graph"):
        ember.compile(retained, fullgraph=True)(model, x, y)


def test_output_whose_graph_was_not_run_breaks():
    model = _model()

    def two(m, x, y):
        out = m(x)
        F.cross_entropy(out, y).backward()
        other = m(x * 2)      # a second graph the call never runs backward on
        return other

    cf = ember.compile(two)
    (x, y), = _data(1)
    for _ in range(2):
        r = cf(model, x, y)
        assert r.grad_fn is not None
    assert not cf.programs() and "no backward pass" in cf.breaks[0].reason


def test_backward_inside_a_call_with_a_no_grad_argument_replays():
    lin = nn.Linear(3, 1).double()

    def step(x):
        loss = lin(x).sum()
        loss.backward()
        return loss

    cstep = ember.compile(step)
    x = ember.randn(4, 3, dtype=ember.float64)
    for _ in range(3):
        lin.zero_grad()
        cstep(x)
        assert ember.allclose(lin.weight.grad, x.sum(0, keepdim=True))
    assert len(cstep.programs()) == 1 and not cstep.breaks


def test_explain_reports_the_step_as_one_graph():
    model = _model()
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    (x, y), = _data(1)
    _step(model, opt, x, y)  # the momentum buffers exist: the capture is not asked to retry
    out = ember.compiler.explain(_step)(model, opt, x, y)
    assert out.graph_count == 1 and out.graph_break_count == 0


@pytest.mark.parametrize("kind", ["conv", "lstm", "transformer"])
def test_whole_step_of_other_layers_matches_eager(kind):
    ember.manual_seed(0)
    if kind == "conv":
        model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(4 * 3 * 3, 3))
        x = ember.randn(5, 1, 8, 8)
    elif kind == "lstm":
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn, self.out = nn.LSTM(4, 6, num_layers=2, batch_first=True), nn.Linear(6, 3)

            def forward(self, t):
                return self.out(self.rnn(t)[0][:, -1])
        model, x = M(), ember.randn(5, 7, 4)
    else:
        model = nn.Sequential(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True), nn.Flatten(),
                              nn.Linear(8 * 6, 3))
        x = ember.randn(5, 6, 8)
    model, x = model.double(), x.double()
    ref = copy.deepcopy(model)
    opt, ropt = ember.optim.AdamW(model.parameters(), lr=1e-2), ember.optim.AdamW(ref.parameters(), lr=1e-2)
    y = ember.tensor([0, 1, 2, 1, 0])
    cstep = ember.compile(_step)
    for i in range(5):
        ember.manual_seed(i)
        a = cstep(model, opt, x, y)
        ember.manual_seed(i)
        b = _step(ref, ropt, x, y)
        assert ember.equal(a, b)
        _same_params(model, ref)
    assert len(cstep.programs()) == 1 and not cstep.breaks


def test_a_replay_is_one_profiler_range():
    model = _model()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    cstep = ember.compile(_step)
    data = _data(3)
    for x, y in data[:2]:
        cstep(model, opt, x, y)
    with ember.profiler.profile() as prof:
        cstep(model, opt, *data[2])
    keys = [e.key for e in prof.key_averages()]
    assert keys == ["CompiledFunction: _step"], keys
