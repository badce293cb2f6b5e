"""nn.DataParallel on two OpenCL devices (run with POCL_DEVICES="pthread pthread"), checked
against the same module on cpu (prints 'data parallel opencl ok')."""
from collections import namedtuple

import ember
import ember.nn as nn

assert ember._plugins.backend_for("opencl").device_count() >= 2, "needs two OpenCL devices"
D0, D1 = ember.device("opencl:0"), ember.device("opencl:1")


def close(a, b, tol=1e-5):
    a, b = a.detach().cpu(), b.detach().cpu()
    assert a.shape == b.shape and (a - b).abs().max().item() < tol, (a, b)


def pair(make):
    ember.manual_seed(0)
    ref = make()
    dev = make()
    dev.load_state_dict(ref.state_dict())
    return ref, dev.to(D0)


make = lambda: nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))  # noqa: E731
ref, net = pair(make)
dp = nn.DataParallel(net)
assert dp.device_ids == [D0, D1] and dp.output_device == D0 and dp.module is net
assert list(dp.state_dict())[0] == "module.0.weight"

# forward and backward: the batch is split 3 + 2, gradients land on the original parameters
x = ember.randn(5, 3)
out = dp(x.to(D0))
assert out.device == D0 and out.shape == (5, 2)
expected = ref(x)
close(out, expected)
out.pow(2).sum().backward()
expected.pow(2).sum().backward()
for p, q in zip(net.parameters(), ref.parameters()):
    assert p.grad is not None and p.grad.device == D0
    close(p.grad, q.grad)

# batch norm normalises each replica's share; the replica on device_ids[0] shares the original's
# buffers, so the running statistics are those of the first chunk (as PyTorch)
ref, net = pair(lambda: nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)))
out = nn.DataParallel(net)(x.to(D0))
close(out[:3], ref(x[:3]))
close(out[3:], ref(x[3:]))
ref2 = pair(lambda: nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)))[0]
ref2(x[:3])
close(net[1].running_mean, ref2[1].running_mean)
assert net[1].num_batches_tracked.item() == 1

# a few training steps equal cpu training on the whole batches
ref, net = pair(lambda: nn.Sequential(nn.Linear(3, 6), nn.ReLU(), nn.Linear(6, 1)))
dp = nn.DataParallel(net, device_ids=[0, 1])
opt, ref_opt = ember.optim.SGD(net.parameters(), lr=0.05), ember.optim.SGD(ref.parameters(), lr=0.05)
for step in range(4):
    xb, yb = ember.randn(8, 3), ember.randn(8, 1)
    for o in (opt, ref_opt):
        o.zero_grad()
    nn.functional.mse_loss(dp(xb.to(D0)), yb.to(D0)).backward()
    nn.functional.mse_loss(ref(xb), yb).backward()
    opt.step()
    ref_opt.step()
for p, q in zip(net.parameters(), ref.parameters()):
    close(p, q)

# output_device, kwargs, containers and scalars
Out = namedtuple("Out", "y n")


class Multi(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x, scale=1.0, extra=None):
        y = self.lin(x) * scale
        return {"y": y, "pair": (y.sum(1), x)}, Out(y, x.shape[0]), y.sum()


ref, net = pair(Multi)
dp = nn.DataParallel(net, device_ids=[D0, D1], output_device=1)
x = ember.randn(4, 2)
d, nt, s = dp(x.to(D0), scale=2.0, extra="same on every replica")
ed, ent, es = ref(x, scale=2.0)
assert d["y"].device == D1
close(d["y"], ed["y"])
close(d["pair"][0], ed["pair"][0])
close(d["pair"][1], x)
assert isinstance(nt, Out) and nt.n == [2, 2]
assert s.shape == (2,)  # one scalar per replica, stacked (with a warning, as PyTorch)
close(s.sum(), es)

# a batch of one runs on one device; no_grad works; the functional form
x1 = ember.randn(1, 2)
close(dp(x1.to(D0))[0]["y"], ref(x1)[0]["y"] * 1)
with ember.no_grad():
    y = nn.parallel.data_parallel(net, x.to(D0), device_ids=[0, 1])[0]["y"]
assert not y.requires_grad
close(y, ref(x)[0]["y"])

# errors: parameters not on device_ids[0]; an exception inside a replica names it
dp = nn.DataParallel(nn.Linear(2, 2).to(D1), device_ids=[0, 1])
try:
    dp(ember.randn(4, 2).to(D0))
except RuntimeError as e:
    assert "module must have its parameters and buffers on device opencl:0" in str(e), e
else:
    raise AssertionError("parameters on the wrong device were accepted")


class Fails(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        if x.device == D1:
            raise ValueError("replica failed on purpose")
        return self.lin(x)


dp = nn.DataParallel(Fails().to(D0))
try:
    dp(ember.randn(4, 2).to(D0))
except ValueError as e:
    assert "in replica 1 on device opencl:1" in str(e) and "replica failed on purpose" in str(e), e
else:
    raise AssertionError("the replica's exception was lost")
print("data parallel opencl ok", flush=True)
