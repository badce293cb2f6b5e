"""Checkpointing, weight averaging and Adafactor against real PyTorch: checkpointed gradients
equal to plain ones (and to torch's), Adafactor trajectories and state, AveragedModel SWA/EMA
values and state-dict keys, SWALR learning rates."""
import numpy as np
import pytest
import torch
import torch.optim.swa_utils
import torch.utils.checkpoint

import ember
import ember.optim.swa_utils
import ember.utils.checkpoint


def _mlp(lib, w):
    m = lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.Tanh(), lib.nn.Linear(6, 3), lib.nn.Softplus())
    with lib.no_grad():
        for p, a in zip(m.parameters(), w):
            p.copy_(lib.tensor(a))
    return m


def _weights(rng):
    return [rng.standard_normal(s).astype(np.float32) for s in [(6, 4), (6,), (3, 6), (3,)]]


@pytest.mark.parametrize("reentrant", [False, True])
@pytest.mark.parametrize("sequential", [False, True])
def test_checkpoint_gradients_match_torch(reentrant, sequential):
    rng = np.random.default_rng(0)
    w, x0 = _weights(rng), rng.standard_normal((5, 4)).astype(np.float32)
    grads = []
    for lib, ck in ((torch, torch.utils.checkpoint), (ember, ember.utils.checkpoint)):
        m = _mlp(lib, w)
        x = lib.tensor(x0, requires_grad=True)
        y = ck.checkpoint_sequential(m, 2, x, use_reentrant=reentrant) if sequential else \
            ck.checkpoint(m, x, use_reentrant=reentrant)
        y.square().sum().backward()
        grads.append([t.grad.detach().numpy() for t in [x, *m.parameters()]])
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


ADAFACTOR = [{}, dict(lr=0.1, weight_decay=0.01, maximize=True), dict(eps=(1e-30, 1e-2), d=2.0, beta2_decay=-0.5)]


@pytest.mark.parametrize("kw", ADAFACTOR, ids=["default", "decay-maximize", "eps-d"])
def test_adafactor_trajectory(kw):
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((2, 4, 5)).astype(np.float32)
    b0 = rng.standard_normal(5).astype(np.float32)
    out = []
    for lib in (torch, ember):
        w, b = lib.tensor(w0, requires_grad=True), lib.tensor(b0, requires_grad=True)
        opt = lib.optim.Adafactor([w, b], **kw)
        for _ in range(6):
            opt.zero_grad()
            ((w * w).sum() * 0.3 + (w.sum(0) @ b).pow(2).sum() + b.exp().sum()).backward()
            opt.step()
        st = opt.state_dict()["state"]
        out.append((w.detach().numpy(), b.detach().numpy(), {k: sorted(v) for k, v in st.items()},
                    st[0]["row_var"].numpy(), st[1]["variance"].numpy()))
    (tw, tb, tk, tr, tv), (ew, eb, ek, er, ev) = out
    np.testing.assert_allclose(ew, tw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(eb, tb, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(er, tr, rtol=1e-5)
    np.testing.assert_allclose(ev, tv, rtol=1e-5)
    assert ek == tk


def test_adafactor_errors_match():
    for kw in [dict(lr=-1.0), dict(beta2_decay=0.5), dict(eps=(-1.0, 1e-3)), dict(d=0.5), dict(weight_decay=-1)]:
        with pytest.raises(ValueError) as t:
            torch.optim.Adafactor([torch.zeros(2, requires_grad=True)], **kw)
        with pytest.raises(ValueError) as e:
            ember.optim.Adafactor([ember.zeros(2, requires_grad=True)], **kw)
        assert str(e.value) == str(t.value)


@pytest.mark.parametrize("mode", ["swa", "ema", "ema-avg_fn", "ema-buffers"])
def test_averaged_model(mode):
    rng = np.random.default_rng(2)
    res = []
    for lib in (torch, ember):
        sw = lib.optim.swa_utils
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4))
        kw = {"swa": {}, "ema": dict(multi_avg_fn=sw.get_ema_multi_avg_fn(0.9)),
              "ema-avg_fn": dict(avg_fn=sw.get_ema_avg_fn(0.8)),
              "ema-buffers": dict(multi_avg_fn=sw.get_ema_multi_avg_fn(0.7), use_buffers=True)}[mode]
        avg = sw.AveragedModel(m, **kw)
        r = np.random.default_rng(3)
        for _ in range(4):
            with lib.no_grad():
                for p in m.parameters():
                    p.copy_(lib.tensor(r.standard_normal(tuple(p.shape)).astype(np.float32)))
            m(lib.tensor(r.standard_normal((5, 3)).astype(np.float32)))  # moves the running stats
            avg.update_parameters(m)
        sd = avg.state_dict()
        res.append({k: v.detach().numpy() for k, v in sd.items()})
    assert list(res[0]) == list(res[1])
    for k in res[0]:
        np.testing.assert_allclose(res[1][k], res[0][k], rtol=1e-5, atol=1e-6, err_msg=k)
    del rng


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 4])
def test_swalr_learning_rates(strategy, anneal_epochs):
    lrs = []
    for lib in (torch, ember):
        opt = lib.optim.SGD([{"params": [lib.zeros(1, requires_grad=True)]},
                             {"params": [lib.zeros(1, requires_grad=True)], "lr": 0.3}], lr=1.0)
        s = lib.optim.swa_utils.SWALR(opt, swa_lr=[0.05, 0.01], anneal_epochs=anneal_epochs,
                                      anneal_strategy=strategy)
        got = []
        for _ in range(7):
            opt.step()
            s.step()
            got.append(s.get_last_lr())
        lrs.append(got)
        lrs.append(sorted(s.state_dict()))
    np.testing.assert_allclose(np.array(lrs[2]), np.array(lrs[0]), rtol=1e-12)
    assert lrs[1] == lrs[3]
