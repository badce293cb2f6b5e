"""ember.optim against real PyTorch (an extra cross-check; the primary references are the numpy
ones in tests/test_optim_*.py): trajectories of every optimizer and option, LBFGS, state-dict
layouts, optimizer checkpoints moved both ways through torch.save/ember.load and
ember.save(format="torch")/torch.load, and every scheduler's learning rates."""
import io
import warnings

import numpy as np
import pytest
import torch

import ember
from test_optim_trajectories import CASES, MLP

SCHEDULERS = {
    "LambdaLR": lambda S, o: S.LambdaLR(o, lambda e: 1 / (1 + e)),
    "MultiplicativeLR": lambda S, o: S.MultiplicativeLR(o, lambda e: 0.95),
    "StepLR": lambda S, o: S.StepLR(o, 3, gamma=0.5),
    "MultiStepLR": lambda S, o: S.MultiStepLR(o, [2, 5, 5, 9]),
    "ConstantLR": lambda S, o: S.ConstantLR(o, 0.25, 4),
    "LinearLR": lambda S, o: S.LinearLR(o, 0.2, 0.9, 6),
    "ExponentialLR": lambda S, o: S.ExponentialLR(o, 0.8),
    "PolynomialLR": lambda S, o: S.PolynomialLR(o, 8, 2.0),
    "CosineAnnealingLR": lambda S, o: S.CosineAnnealingLR(o, 7, 0.001),
    "CosineAnnealingWarmRestarts": lambda S, o: S.CosineAnnealingWarmRestarts(o, 3, 2, 0.001),
    "CyclicLR": lambda S, o: S.CyclicLR(o, 0.01, [0.1, 0.05], step_size_up=3, step_size_down=5, mode="triangular2"),
    "CyclicLR-exp": lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=4, mode="exp_range", gamma=0.97),
    "OneCycleLR": lambda S, o: S.OneCycleLR(o, [1.0, 0.5], total_steps=30),
    "OneCycleLR-3": lambda S, o: S.OneCycleLR(o, 1.0, total_steps=30, three_phase=True, anneal_strategy="linear"),
    "SequentialLR": lambda S, o: S.SequentialLR(o, [S.LinearLR(o, 0.5, total_iters=4), S.CosineAnnealingLR(o, 10)],
                                                 milestones=[4]),
    "ChainedScheduler": lambda S, o: S.ChainedScheduler([S.ConstantLR(o, 0.1, 3), S.ExponentialLR(o, 0.9)]),
}


def params_pair(dtype_e, dtype_t, init):
    e = [ember.tensor(v, dtype=dtype_e, requires_grad=True) for v in init]
    t = [torch.tensor(v, dtype=dtype_t, requires_grad=True) for v in init]
    return e, t


def mlp_loss(lib, ps, prob, dtype):
    W1, b1, W2, b2 = ps
    X, Y = lib.tensor(prob.X, dtype=dtype), lib.tensor(prob.Y, dtype=dtype)
    return ((lib.tanh(X @ W1 + b1) @ W2 + b2 - Y) ** 2).mean()


def step_both(eo, to, ep, tp, prob, de, dt):
    for lib, o, ps, d in ((ember, eo, ep, de), (torch, to, tp, dt)):
        o.zero_grad()
        mlp_loss(lib, ps, prob, d).backward()
        o.step()


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_trajectory_matches_torch(name, kw, precision):
    prob = MLP()
    de, dt = getattr(ember, precision), getattr(torch, precision)
    ep, tp = params_pair(de, dt, prob.init)
    eo, to = getattr(ember.optim, name)(ep, **kw), getattr(torch.optim, name)(tp, **kw)
    rtol = 1e-12 if precision == "float64" else 2e-5
    for k in range(8):
        step_both(eo, to, ep, tp, prob, de, dt)
        for a, b in zip(ep, tp):
            b = b.detach().numpy()
            # float32: PyTorch's kernels fuse multiply-adds (addcmul, lerp) and its BLAS sums in
            # another order, so an element that cancels towards 0 keeps the few-ulp error of the
            # tensor's larger elements (measured: at most 2.5 ulps of the largest after 8 steps)
            atol = rtol * 1e-2 if precision == "float64" else 8 * np.finfo(np.float32).eps * np.abs(b).max()
            np.testing.assert_allclose(a.detach().numpy(), b, rtol=rtol, atol=atol, err_msg=f"step {k + 1}")


@pytest.mark.parametrize("ls", [None, "strong_wolfe"])
def test_lbfgs_matches_torch(ls):
    prob = MLP()
    ep, tp = params_pair(ember.float64, torch.float64, prob.init)
    eo = ember.optim.LBFGS(ep, max_iter=4, history_size=3, line_search_fn=ls)
    to = torch.optim.LBFGS(tp, max_iter=4, history_size=3, line_search_fn=ls)
    for _ in range(3):
        for lib, o, ps in ((ember, eo, ep), (torch, to, tp)):
            def closure(o=o, ps=ps, lib=lib):
                o.zero_grad()
                loss = mlp_loss(lib, ps, prob, getattr(lib, "float64"))
                loss.backward()
                return loss
            o.step(closure)
        for a, b in zip(ep, tp):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-12)
    assert eo.state[ep[0]]["func_evals"] == to.state[tp[0]]["func_evals"]


NAMES = ["SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "Adagrad", "RMSprop", "Adadelta", "Rprop", "ASGD"]
EXTRA = {"SGD": dict(momentum=0.9), "Adam": dict(amsgrad=True), "RMSprop": dict(momentum=0.5, centered=True)}


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_layout_equals_torch(name):
    prob = MLP()
    ep, tp = params_pair(ember.float32, torch.float32, prob.init)
    eo = getattr(ember.optim, name)([{"params": ep[:2]}, {"params": ep[2:], "lr": 1e-3}], **EXTRA.get(name, {}))
    to = getattr(torch.optim, name)([{"params": tp[:2]}, {"params": tp[2:], "lr": 1e-3}], **EXTRA.get(name, {}))
    step_both(eo, to, ep, tp, prob, ember.float32, torch.float32)
    es, ts = eo.state_dict(), to.state_dict()
    assert list(es) == list(ts)
    assert [list(g) for g in es["param_groups"]] == [list(g) for g in ts["param_groups"]]
    assert [g["params"] for g in es["param_groups"]] == [g["params"] for g in ts["param_groups"]]
    for eg, tg in zip(es["param_groups"], ts["param_groups"]):
        assert {k: v for k, v in eg.items() if k != "params"} == {k: v for k, v in tg.items() if k != "params"}
    assert list(es["state"]) == list(ts["state"])
    for i in es["state"]:
        assert list(es["state"][i]) == list(ts["state"][i])
        for k, v in es["state"][i].items():
            tv = ts["state"][i][k]
            assert tuple(v.shape) == tuple(tv.shape) and str(v.dtype).split(".")[1] == str(tv.dtype).split(".")[1]
            np.testing.assert_allclose(v.numpy(), tv.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", NAMES)
def test_torch_checkpoint_resumes_in_ember_and_back(name):
    prob = MLP()
    kw = EXTRA.get(name, {})
    ep, tp = params_pair(ember.float64, torch.float64, prob.init)
    to = getattr(torch.optim, name)(tp, **kw)
    eo = getattr(ember.optim, name)(ep, **kw)
    for _ in range(3):
        to.zero_grad()
        mlp_loss(torch, tp, prob, torch.float64).backward()
        to.step()
    buf = io.BytesIO()
    torch.save({"params": [p.detach() for p in tp], "optim": to.state_dict()}, buf)
    buf.seek(0)
    ckpt = ember.load(buf)                                   # no torch needed on this side
    with ember.no_grad():
        for p, v in zip(ep, ckpt["params"]):
            p.copy_(v)
    eo.load_state_dict(ckpt["optim"])
    step_both(eo, to, ep, tp, prob, ember.float64, torch.float64)
    step_both(eo, to, ep, tp, prob, ember.float64, torch.float64)
    for a, b in zip(ep, tp):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-14)
    # and back: ember's checkpoint into a fresh torch optimizer
    buf = io.BytesIO()
    ember.save({"params": [p.detach() for p in ep], "optim": eo.state_dict()}, buf, format="torch")
    buf.seek(0)
    back = torch.load(buf, weights_only=True)
    tp2 = [p.clone().requires_grad_(True) for p in back["params"]]
    to2 = getattr(torch.optim, name)(tp2, **kw)
    to2.load_state_dict(back["optim"])
    for o, ps in ((to, tp), (to2, tp2)):
        o.zero_grad()
        mlp_loss(torch, ps, prob, torch.float64).backward()
        o.step()
    # tp2's history is ember's steps 4-5: equal to rounding. (torch's load_state_dict casts NAdam's
    # float32 mu_product to the float64 parameter dtype, so that one then multiplies more precisely.)
    rtol = 1e-9 if name == "NAdam" else 1e-12
    for a, b in zip(tp, tp2):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=rtol * 1e-2)


def _lrs(lib, make, epochs=30, metric=None):
    a = lib.ones(1, requires_grad=True)
    b = lib.ones(1, requires_grad=True)
    opt = lib.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.02}], lr=0.1, momentum=0.9)
    sched = make(lib.optim.lr_scheduler, opt)
    out = []
    for _ in range(epochs):
        out.append([g["lr"] for g in opt.param_groups] + [g["momentum"] for g in opt.param_groups])
        opt.step()
        sched.step()
    return out, sched


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_matches_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, es = _lrs(ember, SCHEDULERS[name])
        want, ts = _lrs(torch, SCHEDULERS[name])
    for e, (g, w) in enumerate(zip(got, want)):
        assert g == pytest.approx(w, rel=1e-12, abs=1e-18), f"epoch {e}"
    assert es.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
    esd, tsd = es.state_dict(), ts.state_dict()
    assert set(esd) == set(tsd)


def test_reduce_on_plateau_matches_torch():
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85, 0.85, 0.85, 0.7]
    out = {}
    for lib in (ember, torch):
        a = lib.ones(1, requires_grad=True)
        opt = lib.optim.SGD([a], lr=0.1)
        s = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=2, factor=0.3, cooldown=1, min_lr=0.005)
        seq = []
        for m in metrics:
            opt.step()
            s.step(m)
            seq.append(s.get_last_lr()[0])
        out[lib.__name__] = (seq, set(s.state_dict()))
    assert out["ember"][0] == pytest.approx(out["torch"][0], rel=1e-12)
    assert out["ember"][1] == out["torch"][1]


def test_call_order_warning_parity():
    for lib in (ember, torch):
        opt = lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=0.1)
        sched = lib.optim.lr_scheduler.StepLR(opt, 1)
        with pytest.warns(UserWarning,
                          match="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`"):
            sched.step()
