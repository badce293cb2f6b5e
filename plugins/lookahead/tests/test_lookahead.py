"""ember-lookahead: trajectories against a numpy float64 reference (inner SGD with momentum and
Adam) on every installed backend, exact resume from a saved checkpoint, sharing with the inner
optimizer, and the refusals of bad arguments."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close

N, D = 16, 3


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((N, D)), rng.standard_normal(N), rng.standard_normal(D)


def _dtype(device):
    try:  # float64 where the backend has it
        ember.zeros(1, dtype=ember.float64, device=device)
        return ember.float64
    except TypeError:
        return ember.float32


def _ember_run(device, make_inner, steps, k, alpha, state=None):
    """Least squares on fixed data: the parameter after ``steps`` Lookahead steps (and the
    optimizer, for checkpoints)."""
    X, y, w0 = _data()
    dt = _dtype(device)
    Xt, yt = ember.tensor(X, dtype=dt, device=device), ember.tensor(y, dtype=dt, device=device)
    w = ember.tensor(w0, dtype=dt, device=device, requires_grad=True)
    opt = ember.optim.Lookahead(make_inner([w]), k=k, alpha=alpha)
    if state is not None:
        w.detach().copy_(state[0])
        opt.load_state_dict(state[1])
    for _ in range(steps):
        opt.zero_grad()
        ((Xt @ w - yt) ** 2).mean().backward()
        opt.step()
    return w, opt


def _numpy_run(inner, steps, k, alpha):
    X, y, w = _data()
    slow = w.copy()
    m = np.zeros(D)
    v = np.zeros(D)
    for t in range(1, steps + 1):
        g = 2.0 / N * X.T @ (X @ w - y)
        if inner == "sgd":  # lr 0.05, momentum 0.9 (PyTorch: the first buffer is the gradient)
            m = g if t == 1 else 0.9 * m + g
            w = w - 0.05 * m
        else:  # adam, lr 0.1, betas (0.9, 0.999), eps 1e-8
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            w = w - 0.1 / (1 - 0.9 ** t) * m / (np.sqrt(v) / np.sqrt(1 - 0.999 ** t) + 1e-8)
        if t % k == 0:
            slow = slow + alpha * (w - slow)
            w = slow.copy()
    return w


INNER = {
    "sgd": lambda ps: ember.optim.SGD(ps, lr=0.05, momentum=0.9),
    "adam": lambda ps: ember.optim.Adam(ps, lr=0.1),
}


def test_reachable_through_the_plugin_hook():
    import ember_lookahead.lookahead
    assert ember.optim.Lookahead is ember_lookahead.lookahead.Lookahead
    assert "Lookahead" in dir(ember.optim)


@pytest.mark.parametrize("inner", ["sgd", "adam"])
@pytest.mark.parametrize("k, alpha", [(5, 0.5), (3, 0.8), (1, 0.25)])
def test_trajectory_matches_numpy(device, inner, k, alpha):
    w, _ = _ember_run(device, INNER[inner], 23, k, alpha)
    tol = (1e-9, 1e-12) if w.dtype is ember.float64 else (2e-4, 1e-5)
    assert_close(w, _numpy_run(inner, 23, k, alpha), rtol=tol[0], atol=tol[1])


def test_alpha_one_is_the_inner_optimizer_and_alpha_zero_stays_put(device):
    w1, _ = _ember_run(device, INNER["adam"], 12, 4, 1.0)
    X, y, w0 = _data()
    dt = _dtype(device)
    w = ember.tensor(w0, dtype=dt, device=device, requires_grad=True)
    opt = INNER["adam"]([w])
    Xt, yt = ember.tensor(X, dtype=dt, device=device), ember.tensor(y, dtype=dt, device=device)
    for _ in range(12):
        opt.zero_grad()
        ((Xt @ w - yt) ** 2).mean().backward()
        opt.step()
    assert_close(w1, w.detach().numpy(force=True), rtol=1e-12 if w.dtype is ember.float64 else 1e-6,
                 atol=0)  # slow + 1 * (fast - slow)
    w2, _ = _ember_run(device, INNER["adam"], 8, 4, 0.0)
    assert_close(w2, w0, rtol=0, atol=0)  # every cycle ends back at the slow weights, which never move


@pytest.mark.parametrize("inner", ["sgd", "adam"])
def test_resume_from_a_saved_checkpoint_is_exact(device, inner, tmp_path):
    full, _ = _ember_run(device, INNER[inner], 13, 3, 0.5)
    w, opt = _ember_run(device, INNER[inner], 7, 3, 0.5)  # stopped in the middle of a cycle
    sd = opt.state_dict()
    assert sd["param_groups"][0]["lookahead_step"] == 7 and sd["param_groups"][0]["lookahead_k"] == 3
    assert "lookahead_slow_buff" in sd["state"][0]
    path = tmp_path / "ckpt.pt"
    ember.save({"w": w.detach(), "opt": sd}, path)
    ck = ember.load(path, map_location=device)
    resumed, opt2 = _ember_run(device, INNER[inner], 6, 3, 0.5, state=(ck["w"], ck["opt"]))
    assert ember.equal(resumed, full)
    assert opt2.state_dict()["param_groups"][0]["lookahead_step"] == 13
    # the loaded slow weights are copies, not the checkpoint's tensors
    assert opt2.slow_params[resumed] is not ck["opt"]["state"][0]["lookahead_slow_buff"]


def test_shares_param_groups_and_state_with_the_inner_optimizer():
    w = ember.zeros(3, requires_grad=True)
    inner = ember.optim.SGD([w], lr=0.1, momentum=0.9)
    opt = ember.optim.Lookahead(inner)
    assert opt.param_groups is inner.param_groups and opt.state is inner.state
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    w.grad = ember.ones(3)
    opt.step()
    sched.step()
    assert inner.param_groups[0]["lr"] == 0.05
    assert "momentum_buffer" in opt.state[w]
    opt.zero_grad()
    assert w.grad is None
    # after load_state_dict the inner optimizer holds new group and state objects: still shared
    opt.load_state_dict(opt.state_dict())
    assert opt.param_groups is inner.param_groups and opt.state is inner.state
    assert "Lookahead (k=5, alpha=0.5)" in repr(opt) and "SGD" in repr(opt)


def test_add_param_group_and_per_group_options():
    a = ember.tensor([1.0], requires_grad=True)
    b = ember.tensor([1.0], requires_grad=True)
    opt = ember.optim.Lookahead(ember.optim.SGD([a], lr=0.1), k=2, alpha=0.5)
    a.grad = ember.ones(1)
    opt.step()  # a: 0.9, mid-cycle
    opt.add_param_group({"params": [b], "lookahead_alpha": 1.0, "lr": 0.2})
    g = opt.param_groups[1]
    assert (g["lookahead_k"], g["lookahead_alpha"], g["lookahead_step"]) == (2, 1.0, 0)
    assert b not in opt.slow_params  # made at its first step
    for t in (a, b):
        t.grad = ember.ones(1)
    opt.step()  # group 0 syncs: slow 1.0 -> 1.0 + 0.5 * (0.8 - 1.0); group 1 is at step 1
    assert a.item() == pytest.approx(0.9) and b.item() == pytest.approx(0.8)
    opt.step()  # group 1 syncs with alpha 1: the fast weights
    assert b.item() == pytest.approx(0.6) and opt.slow_params[b].item() == pytest.approx(0.6)
    with pytest.raises(ValueError, match="Invalid lookahead steps: 0"):
        opt.add_param_group({"params": [ember.zeros(1, requires_grad=True)], "lookahead_k": 0})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([ember.zeros(1, requires_grad=True)])


def test_closure_frozen_parameters_and_sync_lookahead():
    w = ember.tensor([2.0, -1.0], requires_grad=True)
    frozen = ember.tensor([5.0])  # requires no grad: no slow copy
    opt = ember.optim.Lookahead(ember.optim.SGD([w, frozen], lr=0.25), k=10)

    def closure():
        opt.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss
    loss = opt.step(closure)
    assert loss.item() == 5.0
    assert opt.slow_params[w].tolist() == [2.0, -1.0]  # taken before the closure moved anything
    assert frozen not in opt.slow_params
    opt.sync_lookahead()  # now: slow = 0.5 * ([2, -1] + [1, -0.5])
    assert w.tolist() == [1.5, -0.75] and opt.param_groups[0]["lookahead_step"] == 1


def test_hooks_run_once_per_step():
    w = ember.zeros(2, requires_grad=True)
    opt = ember.optim.Lookahead(ember.optim.SGD([w], lr=0.1))
    calls = []
    opt.register_step_pre_hook(lambda o, a, kw: calls.append(("pre", type(o).__name__)))
    opt.register_step_post_hook(lambda o, a, kw: calls.append(("post", type(o).__name__)))
    w.grad = ember.ones(2)
    opt.step()
    assert calls == [("pre", "Lookahead"), ("post", "Lookahead")]


def test_loading_a_bare_inner_checkpoint_starts_a_fresh_cycle():
    w = ember.tensor([1.0], requires_grad=True)
    inner = ember.optim.Adam([w], lr=0.1)
    w.grad = ember.ones(1)
    inner.step()
    opt = ember.optim.Lookahead(ember.optim.Adam([w], lr=0.1), k=2)
    opt.load_state_dict(inner.state_dict())
    g = opt.param_groups[0]
    assert g["lookahead_step"] == 0 and g["lookahead_k"] == 2 and opt.slow_params == {}
    assert opt.state[w]["step"].item() == 1.0


def test_bad_arguments_are_refused():
    w = ember.zeros(2, requires_grad=True)
    sgd = ember.optim.SGD([w], lr=0.1)
    for k in (0, -3):
        with pytest.raises(ValueError, match=f"Invalid lookahead steps: {k}"):
            ember.optim.Lookahead(sgd, k=k)
    for k in (2.5, True, "5"):
        with pytest.raises(TypeError, match="k .* must be an int"):
            ember.optim.Lookahead(sgd, k=k)
    for alpha in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="Invalid slow update rate"):
            ember.optim.Lookahead(sgd, alpha=alpha)
    with pytest.raises(TypeError, match="alpha .* must be a real number"):
        ember.optim.Lookahead(sgd, alpha="0.5")
    with pytest.raises(TypeError, match="must be an ember.optim.Optimizer, got builtins.list"):
        ember.optim.Lookahead([w])
    with pytest.raises(ValueError, match="already a Lookahead"):
        ember.optim.Lookahead(ember.optim.Lookahead(sgd))


def test_load_state_dict_refusals():
    w = ember.zeros(2, requires_grad=True)
    opt = ember.optim.Lookahead(ember.optim.SGD([w], lr=0.1), k=2)
    w.grad = ember.ones(2)
    opt.step()
    sd = opt.state_dict()
    bad = {"state": {0: {"lookahead_slow_buff": ember.zeros(3)}}, "param_groups": sd["param_groups"]}
    with pytest.raises(ValueError, match=r"slow weights of parameter 0 have shape \[3\] but the parameter has "
                                         r"shape \[2\]"):
        opt.load_state_dict(bad)
    with pytest.raises(ValueError, match="has no 'param_groups' entry"):
        opt.load_state_dict({"state": {}})
    bad_k = {"state": {}, "param_groups": [dict(sd["param_groups"][0], lookahead_k=0)]}
    with pytest.raises(ValueError, match="Invalid lookahead steps: 0"):
        opt.load_state_dict(bad_k)
