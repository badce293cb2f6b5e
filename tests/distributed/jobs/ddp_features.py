"""DDP's other promises on 2 ranks: broadcast on wrap, buffers, state_dict names, no_sync,
find_unused_parameters, gradient_as_bucket_view, refusal of different models and of unused
parameters without find_unused_parameters (prints 'ddp features ok')."""
import ember
import ember.distributed as dist
import ember.nn as nn
from ember.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group()
R, W = dist.get_rank(), dist.get_world_size()
assert W == 2
assert nn.parallel.DistributedDataParallel is DDP


def same_on_all_ranks(t):
    hi, lo = t.detach().clone(), t.detach().clone()
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    return ember.equal(hi, lo)


def expect(exc_type, fragment, fn):
    try:
        fn()
    except exc_type as e:
        assert fragment in str(e), (fragment, str(e))
        return
    raise AssertionError(f"expected {exc_type.__name__}: {fragment}")


# -- wrap: rank 0's parameters and buffers (ints included) reach every rank; names get "module."
ember.manual_seed(R)
net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
net[1].num_batches_tracked.fill_(10 + R)
net[1].running_mean.fill_(float(R))
ddp = DDP(net)
assert ddp.module is net
assert all(same_on_all_ranks(p) for p in net.parameters())
assert net[1].num_batches_tracked.item() == 10 and net[1].running_mean.tolist() == [0.0] * 4
keys = list(ddp.state_dict())
assert keys[0] == "module.0.weight" and "module.1.running_mean" in keys and all(k.startswith("module.") for k in keys)
plain = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
plain.load_state_dict({k[len("module."):]: v for k, v in ddp.state_dict().items()})
ddp.load_state_dict(ddp.state_dict())

# -- broadcast_buffers: rank 0's running statistics replace rank 1's at each forward
x = ember.randn(6, 3) + R
ddp(x).sum().backward()
assert same_on_all_ranks(net[1].running_mean) is False  # each rank updated them with its own batch
net[1].running_mean.fill_(5.0 * R)
ddp.eval()
with ember.no_grad():
    ddp(x)  # no grad: no broadcast (as PyTorch)
assert net[1].running_mean.tolist() == [5.0 * R] * 4
ddp(x)  # grad mode: rank 0's buffers are broadcast first (eval mode: batch norm keeps them)
assert net[1].running_mean.tolist() == [0.0] * 4 or R == 0
assert same_on_all_ranks(net[1].running_mean) and same_on_all_ranks(net[1].num_batches_tracked)
ddp.train()
for p in net.parameters():
    assert same_on_all_ranks(p.grad), "gradients are averaged"

# -- no_sync: local accumulation, then one averaged step equals averaging the sum
ember.manual_seed(3)
every_x = [[ember.randn(5, 4) * (r + 1) for _ in range(3)] for r in range(W)]
m = nn.Linear(4, 3)
ddp = DDP(m)
xs = every_x[R]
with ddp.no_sync():
    ddp(xs[0]).pow(2).sum().backward()
    ddp(xs[1]).pow(2).sum().backward()
local = m.weight.grad.clone()
assert not same_on_all_ranks(local), "inside no_sync the gradients stay local"
ddp(xs[2]).pow(2).sum().backward()
expected = ember.zeros_like(m.weight)
for r in range(W):  # every rank's local sum, recomputed here
    mr = nn.Linear(4, 3)
    mr.load_state_dict(m.state_dict())
    for xi in every_x[r]:
        mr(xi).pow(2).sum().backward()
    expected += mr.weight.grad / W
assert (m.weight.grad - expected).abs().max().item() < 1e-5, (m.weight.grad, expected)
assert same_on_all_ranks(m.weight.grad)


# -- find_unused_parameters: a branch used only on rank 0, a layer used by no rank
class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = nn.Linear(2, 2)
        self.never = nn.Linear(2, 2)

    def forward(self, x, use_b):
        y = self.a(x)
        return self.b(y) if use_b else y


ember.manual_seed(0)
model = Branchy()
ddp = DDP(model, find_unused_parameters=True)
x = ember.ones(3, 2)
ddp(x, use_b=(R == 0)).sum().backward()
assert model.never.weight.grad is None, "unused on every rank: .grad stays None"
assert same_on_all_ranks(model.b.weight.grad) and same_on_all_ranks(model.a.weight.grad)
ref = Branchy()
ref.load_state_dict(model.state_dict())
ref(x, use_b=True).sum().backward()  # rank 0's contribution; rank 1 contributes zeros to b
assert (model.b.weight.grad - ref.b.weight.grad / 2).abs().max().item() < 1e-6
ddp(x, use_b=True).sum().backward()  # a second iteration accumulates as usual
assert same_on_all_ranks(model.b.weight.grad)

# -- without find_unused_parameters an unused parameter is an error on every rank, at backward
ddp = DDP(Branchy())
expect(RuntimeError, "some parameters received no gradient", lambda: ddp(x, use_b=False).sum().backward())
expect(RuntimeError, "find_unused_parameters=True", lambda: ddp(x, use_b=False).sum().backward())

# -- gradient_as_bucket_view: .grad lives in the bucket; zero_grad(set_to_none=False) keeps it there
ember.manual_seed(1)
m = nn.Linear(3, 3)
ddp = DDP(m, gradient_as_bucket_view=True)
opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad(set_to_none=False)
    ddp(ember.randn(4, 3) + R).pow(2).mean().backward()
    assert m.weight.grad.untyped_storage() is ddp._buckets[0].flat.untyped_storage()
    opt.step()
assert same_on_all_ranks(m.weight)

# -- different models on the ranks are refused at wrap, on every rank
expect(RuntimeError, "expects the same model on every rank", lambda: DDP(nn.Linear(3, 3 + R)))
expect(RuntimeError, "doesn't have any parameter that requires a gradient", lambda: DDP(nn.ReLU()))
expect(ValueError, "device_ids", lambda: DDP(nn.Linear(2, 2), device_ids=[0]))

dist.destroy_process_group()
print(f"rank {R}: ddp features ok", flush=True)
