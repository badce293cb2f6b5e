"""``differentiable=True``: the update is recorded by autograd, so a loss after a few optimizer
steps can be differentiated with respect to the starting point (meta-learning, hypergradients).
Checked against central finite differences of the same steps run without autograd."""
import numpy as np
import pytest

import ember
import ember.optim as optim

A = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, -0.2], [0.0, -0.2, 0.5]])
W0 = np.array([0.8, -0.5, 1.2])


G0 = np.array([0.3, -1.1, 0.4])


def f(w):
    a = ember.tensor(A, dtype=w.dtype)
    return 0.5 * (w @ (a @ w)) + (w ** 4).sum() * 0.1


def warm_optimizer(name, kw, warmup=2):
    """An optimizer whose state has taken ``warmup`` plain steps (so that the differentiated step
    uses non-trivial momentum, moments...)."""
    w = ember.tensor(W0 * 0.9, dtype=ember.float64, requires_grad=True)
    opt = getattr(optim, name)([w], **kw)
    for _ in range(warmup):
        opt.zero_grad()
        f(w).backward()
        opt.step()
    return opt


def one_step(opt, p, grad):
    """Hand the warmed-up state to ``p`` and take one step with gradient ``grad``."""
    old = opt.param_groups[0]["params"][0]
    if old in opt.state:
        opt.state[p] = opt.state.pop(old)
    opt.param_groups[0]["params"] = [p]
    p.grad = grad
    opt.step()
    return f(p)


def differentiated(name, kw, w0, g0):
    """The loss after one update of a non-leaf copy of ``w0`` with gradient ``g0``, with autograd
    through the update (as in PyTorch, the step updates its parameter in place)."""
    opt = warm_optimizer(name, kw)
    opt.defaults["differentiable"] = opt.param_groups[0]["differentiable"] = True
    p = w0.clone()
    p.retain_grad()
    return one_step(opt, p, g0)


def plain(name, kw, w0, g0):
    p = ember.tensor(w0, dtype=ember.float64, requires_grad=True)
    loss = one_step(warm_optimizer(name, kw), p, ember.tensor(g0, dtype=ember.float64))
    return loss.item()


CASES = [("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
         ("Adam", dict(lr=0.05)), ("AdamW", dict(lr=0.05, amsgrad=True)), ("Adamax", dict(lr=0.05)),
         ("NAdam", dict(lr=0.05)), ("RAdam", dict(lr=0.05)), ("Adagrad", dict(lr=0.1, weight_decay=0.1)),
         ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)), ("Adadelta", dict(lr=1.0)),
         ("ASGD", dict(lr=0.05))]


@pytest.fixture
def float64_default():
    prev = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    yield
    ember.set_default_dtype(prev)


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_step_is_differentiable_in_parameters_and_gradients(float64_default, name, kw):
    w0 = ember.tensor(W0, requires_grad=True)
    g0 = ember.tensor(G0, requires_grad=True)
    loss = differentiated(name, kw, w0, g0)
    assert loss.item() == pytest.approx(plain(name, kw, W0, G0), rel=1e-12)
    dw, dg = ember.autograd.grad(loss, (w0, g0))
    h = 1e-6
    for got, which in ((dw, 0), (dg, 1)):
        numeric = []
        for i in range(3):
            e = np.zeros(3)
            e[i] = h
            args_p = (W0 + e, G0) if which == 0 else (W0, G0 + e)
            args_m = (W0 - e, G0) if which == 0 else (W0, G0 - e)
            numeric.append((plain(name, kw, *args_p) - plain(name, kw, *args_m)) / (2 * h))
        np.testing.assert_allclose(got.numpy(), numeric, rtol=1e-5, atol=1e-8,
                                   err_msg="d loss / d " + ("parameter" if which == 0 else "gradient"))


def test_gradient_with_respect_to_the_learning_rate(float64_default):
    lr = ember.tensor(0.1, requires_grad=True)
    w = ember.tensor(W0).clone()
    w.requires_grad_(True)
    v = w * 1.0                      # a non-leaf the optimizer may update in place
    v.retain_grad()
    opt = optim.SGD([v], lr=lr, differentiable=True)
    (g,) = ember.autograd.grad(f(v), v, create_graph=True)
    v.grad = g
    opt.step()
    loss = f(v)
    (dlr,) = ember.autograd.grad(loss, lr)
    # d f(w - lr g) / d lr = -g . grad f(w - lr g)
    w1 = W0 - 0.1 * g.detach().numpy()
    grad_w1 = A @ w1 + 0.4 * w1 ** 3
    assert dlr.item() == pytest.approx(-(g.detach().numpy() @ grad_w1), rel=1e-10)


def test_non_differentiable_step_records_nothing():
    w = ember.tensor(W0, requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    f(w).backward()
    opt.step()
    assert w.grad_fn is None and opt.state[w]["exp_avg"].grad_fn is None
