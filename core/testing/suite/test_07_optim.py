"""Tier 7, optim on the device: optimizers update parameters in place on the backend under test
(through its fused update kernels where it has them, else the ember-op decompositions) and match
numpy float64 references; state lives with the parameter; state dicts round-trip."""
import numpy as np
import pytest

import ember
from ember.testing.helpers import backend_tolerance

P0 = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
G = [np.array([[0.1, -0.2, 0.3], [-0.4, 0.5, 0.05]]), np.array([[-0.3, 0.1, 0.2], [0.6, -0.5, 0.1]]),
     np.array([[0.2, 0.2, -0.1], [0.3, 0.1, -0.4]])]


def _tol(device):
    rtol, atol = backend_tolerance(device, ember.float32)
    return max(rtol, 1e-5), max(atol, 1e-6)


def _steps(device, name, kw, grads=G):
    p = ember.tensor(P0, dtype=ember.float32, device=device, requires_grad=True)
    opt = getattr(ember.optim, name)([p], **kw)
    out = []
    for g in grads:
        p.grad = ember.tensor(g, dtype=ember.float32, device=device)
        opt.step()
        out.append(p.detach().numpy(force=True).astype(np.float64))
    return p, opt, out


def _ref_sgd(lr, momentum, nesterov, wd):
    p, buf, out = P0.copy(), None, []
    for g in G:
        g = g + wd * p
        buf = g.copy() if buf is None else momentum * buf + g
        p = p - lr * (g + momentum * buf if nesterov else buf)
        out.append(p)
    return out


def _ref_adam(lr, b1, b2, eps, wd, decoupled, amsgrad):
    p, m, v, vmax, out = P0.copy(), 0 * P0, 0 * P0, 0 * P0, []
    for t, g in enumerate(G, 1):
        if decoupled:
            p = p * (1 - lr * wd)
        else:
            g = g + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        vh = (vmax if amsgrad else v) / (1 - b2 ** t)
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(vh) + eps)
        out.append(p)
    return out


@pytest.mark.parametrize("path", [{}, {"foreach": False}], ids=["default", "per-tensor"])
@pytest.mark.parametrize("momentum,nesterov,wd", [(0.0, False, 0.0), (0.9, False, 0.0), (0.9, True, 0.1)])
def test_sgd_on_device(device, momentum, nesterov, wd, path):
    p, opt, got = _steps(device, "SGD", dict(lr=0.1, momentum=momentum, nesterov=nesterov, weight_decay=wd, **path))
    rtol, atol = _tol(device)
    for a, b in zip(got, _ref_sgd(0.1, momentum, nesterov, wd)):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    assert p.device == ember.device(device) and p.is_leaf
    if momentum:
        assert opt.state[p]["momentum_buffer"].device == p.device


@pytest.mark.parametrize("path", [{}, {"foreach": False}], ids=["default", "per-tensor"])
@pytest.mark.parametrize("name,kw,decoupled", [("Adam", dict(weight_decay=0.1), False),
                                               ("Adam", dict(amsgrad=True), False),
                                               ("AdamW", dict(weight_decay=0.2), True)])
def test_adam_on_device(device, name, kw, decoupled, path):
    p, opt, got = _steps(device, name, dict(lr=0.1, **kw, **path))
    want = _ref_adam(0.1, 0.9, 0.999, 1e-8, kw.get("weight_decay", 0.0), decoupled, kw.get("amsgrad", False))
    rtol, atol = _tol(device)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    st = opt.state[p]
    assert st["exp_avg"].device == p.device and st["step"].item() == 3.0


@pytest.mark.parametrize("name,kw", [("Adamax", {}), ("NAdam", {}), ("RAdam", {}), ("Adagrad", {}),
                                     ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)), ("Adadelta", {}),
                                     ("Rprop", {}), ("ASGD", {}), ("SGD", dict(lr=0.05, momentum=0.9)),
                                     ("Adam", dict(lr=0.05))])
def test_every_optimizer_descends_on_device(device, name, kw):
    target = ember.tensor([1.0, -2.0, 0.5], device=device)
    p = ember.zeros(3, device=device, requires_grad=True)
    opt = getattr(ember.optim, name)([p], **kw)
    first = None
    for _ in range(30):
        opt.zero_grad()
        loss = ((p - target) ** 2).sum()
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    assert ((p - target) ** 2).sum().item() < first
    assert p.device == ember.device(device)


def test_lbfgs_on_device(device):
    a = ember.tensor([[3.0, 0.5], [0.5, 1.0]], device=device)
    b = ember.tensor([1.0, -1.0], device=device)
    x = ember.zeros(2, device=device, requires_grad=True)
    opt = ember.optim.LBFGS([x], line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = 0.5 * (x @ (a @ x)) - (b * x).sum()
        loss.backward()
        return loss
    opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(force=True), np.linalg.solve([[3.0, 0.5], [0.5, 1.0]], [1.0, -1.0]),
                               rtol=1e-4, atol=1e-5)


def test_state_dict_round_trip_on_device(device):
    _, o1, full = _steps(device, "Adam", dict(lr=0.1))
    p2, o2, _ = _steps(device, "Adam", dict(lr=0.1), grads=G[:2])
    sd = o2.state_dict()
    p3 = ember.tensor(p2.detach().numpy(force=True), device=device, requires_grad=True)
    o3 = ember.optim.Adam([p3], lr=0.1)
    o3.load_state_dict(sd)
    assert o3.state[p3]["exp_avg"].device == p3.device
    p3.grad = ember.tensor(G[2], dtype=ember.float32, device=device)
    o3.step()
    np.testing.assert_array_equal(p3.detach().numpy(force=True), full[-1].astype(np.float32))


def test_scheduler_drives_the_device_optimizer(device):
    p = ember.ones(2, device=device, requires_grad=True)
    opt = ember.optim.SGD([p], lr=1.0)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        p.grad = ember.ones(2, device=device)
        opt.step()
        sched.step()
    np.testing.assert_allclose(p.detach().numpy(force=True), [1 - 1 - 0.5 - 0.25] * 2)
