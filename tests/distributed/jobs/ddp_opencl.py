"""DDP and collectives on opencl tensors over MPI (through host buffers), 2 ranks, checked
against one cpu process (prints 'ddp opencl ok')."""
import ember
import ember.distributed as dist
import ember.nn as nn
from ember.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group()
R, W = dist.get_rank(), dist.get_world_size()
dev = ember.device("opencl:0")

# collectives write results back into opencl tensors, strided views included
t = (ember.arange(6.0) + R).to(dev)
dist.all_reduce(t)
assert t.device == dev and t.cpu().tolist() == [sum(i + r for r in range(W)) for i in range(6)], t
m = ember.zeros(3, 2).to(dev)
col = m[:, 1]
col.fill_(R + 1.0)
dist.all_reduce(col, op=dist.ReduceOp.MAX)
assert m.cpu().tolist() == [[0.0, W]] * 3, m
outs = [ember.zeros(2, dtype=ember.int32).to(dev) for _ in range(W)]
w = dist.all_gather(outs, ember.full((2,), R, dtype=ember.int32).to(dev), async_op=True)
w.wait()
assert [o.cpu().tolist() for o in outs] == [[r, r] for r in range(W)]
if R == 0:
    dist.send(ember.tensor([1.5, 2.5]).to(dev), dst=1)
else:
    got = ember.zeros(2).to(dev)
    dist.recv(got, src=0)
    assert got.cpu().tolist() == [1.5, 2.5]

# DDP training on opencl equals one cpu process on the concatenated batches
ember.manual_seed(5)
X, Y = ember.randn(4 * 4 * W, 4), ember.randn(4 * 4 * W, 1)
ember.manual_seed(10 + R)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).to(dev)
ddp = DDP(net, bucket_cap_mb=0.0001)
start = {k: v.cpu().clone() for k, v in net.state_dict().items()}
opt = ember.optim.Adam(ddp.parameters(), lr=0.01)
ref = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
ref.load_state_dict(start)
ref_opt = ember.optim.Adam(ref.parameters(), lr=0.01)
B = 4
for step in range(4):
    lo = step * B * W
    mine = slice(lo + R * B, lo + (R + 1) * B)
    opt.zero_grad()
    nn.functional.mse_loss(ddp(X[mine].to(dev)), Y[mine].to(dev)).backward()
    opt.step()
    ref_opt.zero_grad()
    nn.functional.mse_loss(ref(X[lo:lo + B * W]), Y[lo:lo + B * W]).backward()
    ref_opt.step()
for p, q in zip(net.parameters(), ref.parameters()):
    assert p.device == dev
    assert (p.detach().cpu() - q.detach()).abs().max().item() < 1e-5
    hi, lo_ = p.detach().clone(), p.detach().clone()
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    dist.all_reduce(lo_, op=dist.ReduceOp.MIN)
    assert ember.equal(hi.cpu(), lo_.cpu()), "parameters differ across ranks"
dist.destroy_process_group()
print(f"rank {R}: ddp opencl ok", flush=True)
