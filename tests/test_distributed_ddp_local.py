"""DistributedDataParallel in one process (a one-rank group of the loopback test backend): the
hook and bucket machinery, no_sync, find_unused_parameters, gradient_as_bucket_view, and the
errors. Averaging across real ranks is tested under mpiexec in ``tests/distributed/``."""
import pytest

import ember
import ember.nn as nn
from ember.nn.parallel import DistributedDataParallel as DDP
from test_distributed_api import loopback, no_mpi  # noqa: F401  (fixtures)

import ember.distributed as dist


@pytest.fixture
def world(loopback):  # noqa: F811
    dist.init_process_group(backend="loopback")
    yield dist.group.WORLD


def _net():
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1)).double()


def test_one_rank_training_equals_plain_training(world):
    ember.manual_seed(0)
    ref, net = _net(), _net()
    net.load_state_dict(ref.state_dict())
    ddp = DDP(net, bucket_cap_mb=0.0003)
    assert ddp.module is net and len(ddp._buckets) >= 3
    assert list(ddp.state_dict()) == ["module." + k for k in ref.state_dict()]
    opt, ref_opt = ember.optim.Adam(ddp.parameters(), lr=0.01), ember.optim.Adam(ref.parameters(), lr=0.01)
    for _ in range(3):
        x, y = ember.randn(5, 4, dtype=ember.float64), ember.randn(5, 1, dtype=ember.float64)
        for o in (opt, ref_opt):
            o.zero_grad()
        (ddp(x) - y).pow(2).mean().backward()
        (ref(x) - y).pow(2).mean().backward()
        opt.step()
        ref_opt.step()
    for p, q in zip(net.parameters(), ref.parameters()):
        assert ember.equal(p, q)


def test_gradients_pass_through_the_buckets(world):
    ember.manual_seed(1)
    net = _net()
    ddp = DDP(net, bucket_cap_mb=0.0003)
    ddp(ember.randn(3, 4, dtype=ember.float64)).sum().backward()
    for i, p in enumerate(ddp._params):
        b, s = ddp._where[i]
        assert ember.equal(b.slots[s], p.grad) and p.grad.untyped_storage() is not b.flat.untyped_storage()
    assert ddp._pass is None and all(b.pending == len(b.params) for b in ddp._buckets)


def test_bucket_order_follows_reverse_parameter_order(world):
    ddp = DDP(_net(), bucket_cap_mb=0.0003)
    order = [i for b in ddp._buckets for i, _ in b.params]
    assert order == sorted(order, reverse=True)
    for b in ddp._buckets:  # a bucket exceeds the cap only when one parameter alone does
        assert len(b.params) == 1 or b.flat.numel() * 8 <= 0.0003 * 2 ** 20


def test_gradient_as_bucket_view(world):
    net = nn.Linear(3, 2)
    ddp = DDP(net, gradient_as_bucket_view=True)
    ddp(ember.ones(2, 3)).sum().backward()
    first = net.weight.grad.clone()
    assert net.weight.grad.untyped_storage() is ddp._buckets[0].flat.untyped_storage()
    ddp(ember.ones(2, 3)).sum().backward()  # accumulates in place, in the bucket
    assert ember.equal(net.weight.grad, first * 2)
    net.zero_grad()
    assert net.weight.grad is None
    ddp(ember.ones(2, 3)).sum().backward()
    assert ember.equal(net.weight.grad, first)


def test_no_sync_skips_the_reduction(world):
    net = nn.Linear(3, 2)
    ddp = DDP(net)
    with ddp.no_sync():
        assert not ddp.require_backward_grad_sync
        ddp(ember.ones(2, 3)).sum().backward()
        assert ddp._pass is None
    assert ddp.require_backward_grad_sync
    ddp(ember.ones(2, 3)).sum().backward()
    assert net.weight.grad.tolist() == [[4.0] * 3] * 2


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(2, 2)
        self.unused = nn.Linear(2, 2)

    def forward(self, x):
        return self.used(x)


def test_unused_parameters(world):
    ddp = DDP(Branchy())
    with pytest.raises(RuntimeError, match="received no gradient.*unused.weight, unused.bias.*find_unused_parameters"):
        ddp(ember.ones(1, 2)).sum().backward()
    m = Branchy()
    ddp = DDP(m, find_unused_parameters=True)
    assert ddp(ember.ones(1, 2)).sum().backward() is None
    assert m.unused.weight.grad is None and m.used.weight.grad is not None
    assert ddp._unused is None  # recomputed at every forward


def test_wrap_errors(world, prim_backend):
    with pytest.raises(TypeError, match="must be an ember.nn.Module"):
        DDP(ember.ones(2))
    with pytest.raises(RuntimeError, match="doesn't have any parameter that requires a gradient"):
        DDP(nn.Linear(2, 2).requires_grad_(False))
    with pytest.raises(ValueError, match="use device_ids=None for cpu modules"):
        DDP(nn.Linear(2, 2), device_ids=[0])
    with pytest.raises(ValueError, match="bucket_cap_mb must be positive"):
        DDP(nn.Linear(2, 2), bucket_cap_mb=0)
    with pytest.raises(RuntimeError, match="moves cpu tensors, but the module is on prim"):
        DDP(nn.Linear(2, 2).to(prim_backend))
    with pytest.raises(TypeError, match="unsupported arguments"):
        DDP(nn.Linear(2, 2), mixed_precision=True)


def test_without_a_process_group(no_mpi):  # noqa: F811
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DDP(nn.Linear(2, 2))


def test_buckets_are_per_dtype(world):
    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2)
            self.b = nn.Linear(2, 2).double()

        def forward(self, x):
            return self.a(x).sum() + self.b(x.double()).sum()

    m = Mixed()
    ddp = DDP(m)
    assert sorted(str(b.flat.dtype) for b in ddp._buckets) == ["ember.float32", "ember.float64"]
    ddp(ember.ones(3, 2)).backward()
    assert m.a.weight.grad.dtype is ember.float32 and m.b.weight.grad.dtype is ember.float64
    assert m.b.weight.grad.tolist() == [[3.0, 3.0], [3.0, 3.0]]
