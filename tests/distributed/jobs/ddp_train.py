"""The DDP acceptance run: DistributedSampler-fed float64 training on every rank ends with
parameters identical on all ranks and equal (1e-10) to one process training on the
concatenated batches; for SGD with momentum, Adam, and RMSprop with gradient_as_bucket_view."""
import ember
import ember.distributed as dist
import ember.nn as nn
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset

EPOCHS, BATCH = 3, 4

dist.init_process_group()
R, W = dist.get_rank(), dist.get_world_size()

ember.manual_seed(1234)  # the same data on every rank
X = ember.randn(40, 5, dtype=ember.float64)
Y = (X[:, :1] * 2 - X[:, 1:2]).tanh() + 0.1 * ember.randn(40, 1, dtype=ember.float64)
data = TensorDataset(X, Y)


def make_model():
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 1)).double()


def make_opt(params, name):
    if name == "sgd":
        return ember.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-3)
    if name == "adam":
        return ember.optim.Adam(params, lr=0.01)
    if name == "rmsprop":
        return ember.optim.RMSprop(params, lr=0.01)
    raise SystemExit(f"unknown optimizer {name}")


def run(opt_name, as_view):
    ember.manual_seed(100 + R)  # different initial weights per rank: DDP must broadcast rank 0's
    local = make_model()
    ddp = DDP(local, bucket_cap_mb=0.0005, gradient_as_bucket_view=as_view)  # ~500 bytes: several buckets
    assert len(ddp._buckets) > 2, len(ddp._buckets)
    start = {k: v.clone() for k, v in ddp.module.state_dict().items()}
    opt = make_opt(ddp.parameters(), opt_name)
    sampler = DistributedSampler(data, shuffle=True, seed=7)
    loader = DataLoader(data, batch_size=BATCH, sampler=sampler)
    loss_fn = nn.MSELoss()
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            loss_fn(ddp(x), y).backward()
            opt.step()

    # identical on every rank: bit for bit
    mine = [p.detach().clone() for p in ddp.module.parameters()]
    for p in mine:
        hi, lo = p.clone(), p.clone()
        dist.all_reduce(hi, op=dist.ReduceOp.MAX)
        dist.all_reduce(lo, op=dist.ReduceOp.MIN)
        assert ember.equal(hi, lo), "parameters differ across ranks"

    # one process, the same steps on the concatenated batches of every rank
    ref = make_model()
    ref.load_state_dict(start)
    ref_opt = make_opt(ref.parameters(), opt_name)
    samplers = [DistributedSampler(data, num_replicas=W, rank=r, shuffle=True, seed=7) for r in range(W)]
    for epoch in range(EPOCHS):
        per_rank = []
        for s in samplers:
            s.set_epoch(epoch)
            idx = list(s)
            per_rank.append([idx[i:i + BATCH] for i in range(0, len(idx), BATCH)])
        for step in range(len(per_rank[0])):
            idx = [i for r in range(W) for i in per_rank[r][step]]
            ref_opt.zero_grad()
            loss_fn(ref(X[idx]), Y[idx]).backward()
            ref_opt.step()
    worst = max((a - b).abs().max().item() for a, b in zip(mine, ref.parameters()))
    assert worst < 1e-10, worst
    moved = max((a - b).abs().max().item() for a, b in zip(mine, start.values()))
    assert moved > 1e-3, "training did not change the parameters"
    print(f"rank {R}: ddp {opt_name}{' view' if as_view else ''} ok (max difference to one process {worst:.1e})",
          flush=True)


for opt_name, as_view in (("sgd", False), ("adam", False), ("rmsprop", True)):
    run(opt_name, as_view)
dist.destroy_process_group()
