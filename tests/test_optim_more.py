"""ember.optim.swa_utils, Adafactor, SparseAdam (and the sparse embedding gradient it takes), by hand."""
import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, get_swa_avg_fn, update_bn
from opencl_probe import opencl_available as _opencl_available


def _set(m, value):
    with ember.no_grad():
        for p in m.parameters():
            p.fill_(value)


def test_swa_is_the_running_mean_and_copies_buffers():
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    avg = AveragedModel(m)
    assert list(avg.state_dict())[0] == "n_averaged" and avg.n_averaged.dtype == ember.int64
    for v in (1.0, 2.0, 6.0):
        _set(m, v)
        with ember.no_grad():
            m[1].running_mean.fill_(v)
        avg.update_parameters(m)
    np.testing.assert_allclose(avg.module[0].weight.detach().numpy(), np.full((2, 2), 3.0))
    np.testing.assert_array_equal(avg.module[1].running_mean.numpy(), [6.0, 6.0])  # copied, not averaged
    assert avg.n_averaged.item() == 3


def test_ema_multi_avg_fn_and_buffers():
    m = nn.Linear(1, 1, bias=False)
    avg = AveragedModel(m, multi_avg_fn=get_ema_multi_avg_fn(0.5))
    for v in (4.0, 0.0, 2.0):
        _set(m, v)
        avg.update_parameters(m)
    assert avg.module.weight.item() == pytest.approx((4 * 0.5 + 0) * 0.5 + 1.0)  # 4, then 2, then 2
    with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided"):
        get_ema_multi_avg_fn(1.5)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        AveragedModel(m, avg_fn=get_swa_avg_fn(), multi_avg_fn=get_ema_multi_avg_fn())


def test_update_bn_recomputes_the_statistics():
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2, momentum=0.3))
    with ember.no_grad():
        m[0].weight.copy_(ember.eye(2))
        m[0].bias.zero_()
    m.eval()
    data = [ember.tensor([[1.0, 2.0], [3.0, 6.0]]), (ember.tensor([[5.0, 10.0], [7.0, 14.0]]), None)]
    update_bn(data, m)
    np.testing.assert_allclose(m[1].running_mean.numpy(), [4.0, 8.0])  # cumulative mean over batches
    assert m[1].momentum == 0.3 and not m.training


def test_swalr_cosine_schedule():
    opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0)
    s = SWALR(opt, swa_lr=0.1, anneal_epochs=3)
    lrs = []
    for _ in range(4):
        opt.step()
        s.step()
        lrs.append(s.get_last_lr()[0])
    # alpha_t = (1 - cos(pi t / 3)) / 2 applied to the previous rate's "initial" value
    a1 = (1 - math.cos(math.pi / 3)) / 2
    assert lrs[0] == pytest.approx(0.1 * a1 + 1.0 * (1 - a1))
    assert lrs[2:] == [pytest.approx(0.1)] * 2
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        SWALR(opt, 0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        SWALR(opt, 0.1, anneal_epochs=-1)


def test_adafactor_first_step_by_hand():
    w0 = np.array([[1.0, -2.0], [0.5, 3.0]])
    g = np.array([[0.2, -0.4], [0.1, 0.3]])
    w = ember.tensor(w0, requires_grad=True)
    opt = ember.optim.Adafactor([w], lr=0.01)
    w.grad = ember.tensor(g)
    opt.step()
    # step 1: beta2_t = 1, so row_var/col_var are the mean squares of rows/columns
    row = (g ** 2).mean(1, keepdims=True)
    col = (g ** 2).mean(0, keepdims=True)
    v = row @ col / max(row.mean(), np.finfo(np.float64).eps)
    upd = g / np.sqrt(v)
    upd /= max(1.0, np.sqrt((upd ** 2).mean()))
    alpha = max(1e-3, np.sqrt((w0 ** 2).mean())) * min(0.01, 1.0)
    np.testing.assert_allclose(w.detach().numpy(), w0 - alpha * upd, rtol=1e-12)
    assert sorted(opt.state[w]) == ["col_var", "row_var", "step"]
    assert tuple(opt.state[w]["row_var"].shape) == (2, 1) and tuple(opt.state[w]["col_var"].shape) == (1, 2)


def test_adafactor_refuses_bad_args():
    with pytest.raises(ValueError, match="Clipping threshold d should be >= 1 but is: 0.5"):
        ember.optim.Adafactor([ember.zeros(1, requires_grad=True)], d=0.5)


def test_sparse_embedding_gradient_and_sparse_adam_by_hand():
    e = nn.Embedding(4, 2, sparse=True, padding_idx=3)
    with ember.no_grad():
        e.weight.copy_(ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]))
    w0 = e.weight.detach().numpy().copy()
    e(ember.tensor([0, 2, 2, 3])).sum().backward()
    g = e.weight.grad
    assert g.is_sparse and g._nnz() == 3  # one entry per looked-up index but the padding one, uncoalesced
    np.testing.assert_array_equal(g.to_dense().numpy(), [[1, 1], [0, 0], [2, 2], [0, 0]])
    opt = ember.optim.SparseAdam(e.parameters(), lr=0.1)
    opt.step()
    # step 1: m = 0.1 g, v = 0.001 g^2, step = lr * sqrt(1 - 0.999) / (1 - 0.9) * m / (sqrt(v) + eps) = lr * sign(g)
    expect = w0.copy()
    expect[[0, 2]] -= 0.1 * (1 - 1e-8 / (np.sqrt(0.001) * np.array([[1.0], [2.0]]) + 1e-8))
    np.testing.assert_allclose(e.weight.detach().numpy(), expect, rtol=1e-6)
    np.testing.assert_array_equal(e.weight.detach().numpy()[[1, 3]], w0[[1, 3]])  # rows without gradient untouched
    assert opt.state[e.weight]["step"] == 1


def test_sparse_adam_refuses_dense_gradients_and_bad_args():
    w = ember.zeros(2, requires_grad=True)
    (w * 2).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        ember.optim.SparseAdam([w]).step()
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        ember.optim.SparseAdam([w], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="SparseAdam requires dense parameter tensors"):
        ember.optim.SparseAdam([ember.zeros(2, 2).to_sparse().requires_grad_()])


@pytest.mark.skipif(not _opencl_available(), reason="needs the opencl backend with pyopencl and an OpenCL device")
def test_opencl_adafactor_sparse_adam_ema_lazy_prune():
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    res = {}
    for dev in ("cpu", "opencl"):
        w = ember.tensor(w0, device=dev, requires_grad=True)
        opt = ember.optim.Adafactor([w], lr=0.05)
        for _ in range(3):
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
        e = nn.Embedding(3, 2, sparse=True).to(dev)
        with ember.no_grad():
            e.weight.copy_(ember.tensor(w0[:, :2], device=dev))
        sa = ember.optim.SparseAdam(e.parameters(), lr=0.1)
        e(ember.tensor([0, 2, 2], device=dev)).pow(2).sum().backward()
        sa.step()
        m = nn.Sequential(nn.LazyLinear(2)).to(dev)
        m(ember.ones(1, 3, device=dev))
        ema = AveragedModel(m, multi_avg_fn=get_ema_multi_avg_fn(0.5))
        with ember.no_grad():
            m[0].weight.fill_(1.0)
        ema.update_parameters(m)
        with ember.no_grad():
            m[0].weight.fill_(3.0)
        ema.update_parameters(m)
        ember.nn.utils.prune.l1_unstructured(m[0], "weight", amount=2)
        res[dev] = (w.detach().cpu().numpy(), e.weight.detach().cpu().numpy(),
                    ema.module[0].weight.detach().cpu().numpy(),
                    int(m[0].weight_mask.sum().item()))
    for a, b in zip(res["cpu"][:3], res["opencl"][:3]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res["opencl"][2], np.full((2, 3), 2.0))
    assert res["opencl"][3] == 4


def test_sgd_and_adagrad_take_sparse_gradients_others_refuse():
    # SGD: w - 0.5 g; Adagrad, step 1: w - 0.5 * g / |g|
    for name, kw, expect in [("SGD", dict(lr=0.5), [[0.0, 0.5], [1.5, 1.5]]),
                             ("Adagrad", dict(lr=0.5), [[0.5, 1.0], [1.5, 1.5]])]:
        e = nn.Embedding(2, 2, sparse=True)
        with ember.no_grad():
            e.weight.copy_(ember.tensor([[1.0, 1.5], [2.0, 2.0]]))
        opt = getattr(ember.optim, name)(e.parameters(), **kw)
        e(ember.tensor([0, 0, 1])).sum().backward()  # row 0 gets 2, row 1 gets 1
        opt.step()
        np.testing.assert_allclose(e.weight.detach().numpy(), np.array(expect), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Adam does not support sparse gradients, please consider SparseAdam"):
        ember.optim.AdamW(e.parameters()).step()
    with pytest.raises(RuntimeError, match="weight_decay option is not compatible with sparse gradients"):
        ember.optim.Adagrad(e.parameters(), weight_decay=0.1).step()
