"""nn.DataParallel on cpu: one device is a pass-through; its building blocks (scatter, gather,
replicate, parallel_apply) on cpu devices. Two real devices: tests/distributed/test_opencl_parallel.py."""
from collections import namedtuple

import pytest

import ember
import ember.nn as nn
from ember.nn.parallel import data_parallel, gather, parallel_apply, replicate, scatter, scatter_kwargs


def test_one_device_is_a_pass_through():
    net = nn.Linear(3, 2)
    dp = nn.DataParallel(net)
    assert dp.device_ids == [ember.device("cpu")] and dp.module is net
    x = ember.randn(4, 3)
    calls = []
    net.register_forward_hook(lambda m, i, o: calls.append(i[0]))
    out = dp(x)
    assert calls[0] is x, "the module sees the caller's tensor, not a copy"
    assert ember.equal(out, net(x))
    out.sum().backward()
    assert net.weight.grad is not None
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    assert nn.parallel.DataParallel is nn.DataParallel


def test_replicas_on_two_cpu_devices_send_gradients_to_the_original():
    # two replicas on the same cpu device run the whole split/replicate/threads/gather path
    ember.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    ref = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    ref.load_state_dict(net.state_dict())
    dp = nn.DataParallel(net, device_ids=["cpu", "cpu"])
    x = ember.randn(7, 3)
    out = dp(x)
    assert out.shape == (7, 2)
    assert (out - ref(x)).abs().max().item() < 1e-6
    out.pow(2).sum().backward()
    ref(x).pow(2).sum().backward()
    for p, q in zip(net.parameters(), ref.parameters()):
        assert (p.grad - q.grad).abs().max().item() < 1e-5


def test_scatter_and_gather():
    devs = ["cpu", "cpu", "cpu"]
    Pair = namedtuple("Pair", "a b")
    parts = scatter((ember.arange(5), {"k": ember.arange(10).reshape(5, 2)}, "same", Pair(ember.ones(5), 1)), devs)
    assert len(parts) == 3
    assert [p[0].tolist() for p in parts] == [[0, 1], [2, 3], [4]]
    assert [p[1]["k"].shape[0] for p in parts] == [2, 2, 1] and all(p[2] == "same" for p in parts)
    assert all(isinstance(p[3], Pair) and p[3].b == 1 for p in parts)
    assert len(scatter(ember.arange(2), devs)) == 2, "fewer chunks than devices for a small batch"
    ins, kws = scatter_kwargs((ember.arange(4),), {"s": ember.arange(4) * 2}, devs[:2])
    assert [i[0].tolist() for i in ins] == [[0, 1], [2, 3]] and [k["s"].tolist() for k in kws] == [[0, 2], [4, 6]]
    ins, kws = scatter_kwargs((), {"s": ember.arange(4)}, devs[:2])
    assert ins == ((), ()) and len(kws) == 2
    outs = [{"y": ember.ones(2, 1) * i, "t": (ember.zeros(1), None), "n": i} for i in range(3)]
    g = gather(outs, "cpu")
    assert g["y"].tolist() == [[0.0], [0.0], [1.0], [1.0], [2.0], [2.0]] and g["t"][1] is None and g["n"] == [0, 1, 2]
    assert gather([ember.ones(2, 2), ember.zeros(2, 1)], "cpu", dim=1).shape == (2, 3)
    with pytest.warns(UserWarning, match="all input tensors were scalars"):
        assert gather([ember.tensor(1.0), ember.tensor(2.0)], "cpu").tolist() == [1.0, 2.0]


def test_scatter_and_gather_are_differentiable():
    x = ember.arange(6.0, requires_grad=True)
    parts = scatter(x, ["cpu", "cpu"])
    y = gather([p * (i + 1) for i, p in enumerate(parts)], "cpu")
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]


def test_replicate_shares_nothing_but_sends_gradients_back():
    bn = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    a, b = replicate(bn, ["cpu", "cpu"])
    assert a is not bn and a[0] is not bn[0] and type(a[1]) is nn.BatchNorm1d
    assert a[0].weight is bn[0].weight, "on the original's device the replica uses the original tensors"
    assert a[1].running_mean is bn[1].running_mean
    (a(ember.ones(3, 2)).sum() + b(ember.ones(3, 2) * 2).sum()).backward()
    assert bn[0].weight.grad is not None
    d = replicate(bn, ["cpu"], detach=True)[0]
    assert not d[0].weight.requires_grad


def test_parallel_apply_runs_in_threads_with_the_callers_grad_mode():
    import threading
    seen = []

    class Probe(nn.Module):
        def forward(self, x, add=0):
            seen.append((threading.get_ident(), ember.is_grad_enabled()))
            return x + add

    mods = [Probe(), Probe()]
    with ember.no_grad():
        outs = parallel_apply(mods, [(ember.ones(1),), (ember.zeros(1),)], [{"add": 1}, {}])
    assert [o.tolist() for o in outs] == [[2.0], [0.0]]
    # two worker threads (not this one; idents may be reused once a thread has finished)
    main = threading.get_ident()
    assert len(seen) == 2 and all(t != main for t, _ in seen) and all(g is False for _, g in seen)
    with pytest.raises(ValueError, match="2 modules but 1 inputs"):
        parallel_apply(mods, [(ember.ones(1),)])


def test_an_exception_in_a_replica_names_it():
    class Fails(nn.Module):
        def forward(self, x):
            if x[0].item() > 2:
                raise KeyError("bad batch")
            return x

    with pytest.raises(KeyError, match="Caught KeyError in replica 1 on device cpu"):
        nn.DataParallel(Fails(), device_ids=["cpu", "cpu"])(ember.arange(6.0))


def test_functional_form_and_errors():
    net = nn.Linear(2, 2)
    x = ember.randn(4, 2)
    assert (data_parallel(net, x, device_ids=["cpu", "cpu"]) - net(x)).abs().max().item() < 1e-6
    with pytest.raises(TypeError, match="must be an ember.nn.Module"):
        nn.DataParallel(lambda x: x)
    with pytest.raises(ValueError, match="device_ids must not be empty"):
        nn.DataParallel(net, device_ids=[])
