"""Every collective on every rank, checked against values computed locally (run under mpiexec
with 2 or more ranks; prints 'collectives ok' on each rank)."""
import numpy as np

import ember
import ember.distributed as dist
from ember.distributed import ReduceOp

dist.init_process_group()
R, W = dist.get_rank(), dist.get_world_size()
assert W >= 2, W
assert dist.is_initialized() and dist.get_backend() == "mpi"
assert dist.group.WORLD is dist.GroupMember.WORLD and dist.group.WORLD.size() == W


def close(t, expected, what):
    got = t.numpy().astype(np.float64)
    exp = np.asarray(expected, dtype=np.float64)
    assert got.shape == exp.shape and np.allclose(got, exp, rtol=1e-2, atol=1e-2), (what, got, exp)


def values(rank, dtype, n=6):
    """Rank-dependent values exact in every dtype."""
    base = np.arange(n) % 3 + rank + 1
    if dtype is ember.bool:
        return ember.tensor((base + rank) % 2 == 0)
    return ember.tensor(base.tolist(), dtype=dtype)


NUMERIC = [ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float16, ember.bfloat16,
           ember.float32, ember.float64]
ALL = NUMERIC + [ember.bool]
ranks_vals = lambda dt: [values(r, dt).numpy().astype(np.float64) for r in range(W)]  # noqa: E731

# all_reduce: every op that the dtype supports, sync and async
for dt in ALL:
    per = ranks_vals(dt)
    ops = {ReduceOp.SUM: sum(per), ReduceOp.MAX: np.max(per, 0), ReduceOp.MIN: np.min(per, 0),
           ReduceOp.PRODUCT: np.prod(per, 0)}
    if dt is ember.bool:
        ops = {ReduceOp.SUM: np.any(per, 0), ReduceOp.MAX: np.any(per, 0), ReduceOp.MIN: np.all(per, 0),
               ReduceOp.PRODUCT: np.all(per, 0), ReduceOp.BXOR: np.sum(per, 0) % 2}
    elif not dt.is_floating_point:
        ints = [p.astype(np.int64) for p in per]
        ops.update({ReduceOp.BAND: np.bitwise_and.reduce(ints), ReduceOp.BOR: np.bitwise_or.reduce(ints),
                    ReduceOp.BXOR: np.bitwise_xor.reduce(ints)})
    else:
        ops[ReduceOp.AVG] = sum(per) / W
    for op, expected in ops.items():
        for async_op in (False, True):
            t = values(R, dt)
            v0 = t._version[0]
            work = dist.all_reduce(t, op=op, async_op=async_op)
            if async_op:
                assert isinstance(work, dist.Work)
                assert work.wait() is True and work.is_completed() and work.is_success()
                assert work.result()[0] is t
            else:
                assert work is None
            assert t.dtype is dt
            close(t, expected, f"all_reduce {dt} {op}")
            assert t._version[0] > v0, "an in-place collective bumps the version counter"

# non-contiguous and offset views are reduced in place; the rest of the storage is untouched
base = ember.arange(12.0).reshape(3, 4) + R
col = base[:, 1]
dist.all_reduce(col)
expected = np.arange(12.0).reshape(3, 4) + R
expected[:, 1] = sum(np.arange(12.0).reshape(3, 4)[:, 1] + r for r in range(W))
close(base, expected, "strided all_reduce")
part = ember.zeros(10)
view = part[3:7]
view.fill_(R + 1.0)
dist.all_reduce(view)
close(part, [0, 0, 0] + [sum(range(1, W + 1))] * 4 + [0, 0, 0], "offset view all_reduce")

# broadcast from every source, every dtype (raw bytes), sync and async
for dt in ALL:
    for src in range(W):
        t = values(R, dt)
        w = dist.broadcast(t, src=src, async_op=(src % 2 == 1))
        if w is not None:
            w.wait()
        close(t, values(src, dt).numpy(), f"broadcast {dt} from {src}")
t = ember.zeros(3)
if R == 1:
    t += 7
dist.broadcast(t, group_src=1)
close(t, [7, 7, 7], "broadcast group_src")

# reduce to every destination; others keep their values
for dst in range(W):
    t = ember.full((4,), float(R + 1))
    dist.reduce(t, dst=dst, op=ReduceOp.SUM)
    close(t, [sum(range(1, W + 1))] * 4 if R == dst else [R + 1] * 4, f"reduce to {dst}")
t = ember.full((2,), float(R + 2), dtype=ember.float16)
dist.reduce(t, dst=0, op=ReduceOp.PRODUCT, async_op=True).wait()
if R == 0:
    close(t, [np.prod([r + 2 for r in range(W)])] * 2, "reduce float16 product")

# all_gather: equal and uneven shapes, async
outs = [ember.zeros(2, 3) for _ in range(W)]
dist.all_gather(outs, ember.full((2, 3), float(R)))
for r, o in enumerate(outs):
    close(o, np.full((2, 3), r), "all_gather")
outs = [ember.zeros(r + 1, dtype=ember.int32) for r in range(W)]
w = dist.all_gather(outs, ember.full((R + 1,), R, dtype=ember.int32), async_op=True)
w.wait()
for r, o in enumerate(outs):
    close(o, [r] * (r + 1), "uneven all_gather")
bf = [ember.zeros(3, dtype=ember.bfloat16) for _ in range(W)]
dist.all_gather(bf, ember.full((3,), R + 0.5, dtype=ember.bfloat16))
for r, o in enumerate(bf):
    close(o, [r + 0.5] * 3, "bfloat16 all_gather")

# all_gather_into_tensor: concatenated and stacked outputs
out = ember.zeros(W * 2, 3)
dist.all_gather_into_tensor(out, ember.full((2, 3), float(R)))
close(out, np.repeat(np.arange(W), 6).reshape(W * 2, 3), "all_gather_into_tensor cat")
out = ember.zeros(W, 2)
dist.all_gather_into_tensor(out, ember.tensor([R, R * 10.0]), async_op=True).wait()
close(out, [[r, r * 10.0] for r in range(W)], "all_gather_into_tensor stack")
assert dist.all_gather_base is dist.all_gather_into_tensor

# reduce_scatter_tensor / reduce_scatter
inp = ember.arange(float(W * 3)) + R
out = ember.zeros(3)
dist.reduce_scatter_tensor(out, inp)
full = sum(np.arange(W * 3.0) + r for r in range(W))
close(out, full[R * 3:(R + 1) * 3], "reduce_scatter_tensor")
out = ember.zeros(3)
dist.reduce_scatter_tensor(out, inp, op=ReduceOp.AVG, async_op=True).wait()
close(out, full[R * 3:(R + 1) * 3] / W, "reduce_scatter_tensor avg")
out = ember.zeros(2, dtype=ember.int64)
dist.reduce_scatter(out, [ember.full((2,), i * 10 + R, dtype=ember.int64) for i in range(W)], op=ReduceOp.MAX)
close(out, [R * 10 + W - 1] * 2, "reduce_scatter max")

# gather / scatter to and from every root
for root in range(W):
    lst = [ember.zeros(2) for _ in range(W)] if R == root else None
    dist.gather(ember.full((2,), R * 1.5), lst, dst=root)
    if R == root:
        for r, o in enumerate(lst):
            close(o, [r * 1.5] * 2, "gather")
    o = ember.zeros(3, dtype=ember.int16)
    src_list = [ember.full((3,), 100 + r, dtype=ember.int16) for r in range(W)] if R == root else None
    w = dist.scatter(o, src_list, src=root, async_op=True)
    w.wait()
    close(o, [100 + R] * 3, "scatter")
lst = [ember.zeros(r + 1) for r in range(W)] if R == 0 else None
dist.gather(ember.ones(R + 1) * R, lst)  # dst defaults to 0; uneven sizes
if R == 0:
    for r, o in enumerate(lst):
        close(o, [r] * (r + 1), "uneven gather")

# point to point: a ring, blocking and non-blocking, tags, any source, opencl-free strided receive
nxt, prv = (R + 1) % W, (R - 1) % W
sendbuf = ember.arange(5.0) + R
recvbuf = ember.zeros(5)
if R % 2 == 0:
    dist.send(sendbuf, dst=nxt)
    assert dist.recv(recvbuf, src=prv) == prv
else:
    assert dist.recv(recvbuf, src=prv) == prv
    dist.send(sendbuf, dst=nxt)
close(recvbuf, np.arange(5.0) + prv, "send/recv ring")
big_send = ember.arange(300_000, dtype=ember.float32) + R  # over MPI's eager limit: rendezvous
big_recv = ember.zeros(300_000)
reqs = [dist.isend(big_send, dst=nxt, tag=5), dist.irecv(big_recv, src=prv, tag=5)]
for w in reqs:  # waiting on the send first must not deadlock
    w.wait()
close(big_recv[:3], [prv, prv + 1, prv + 2], "isend/irecv")
ops = [dist.P2POp(dist.isend, ember.full((2,), float(R)), nxt, tag=9),
       dist.P2POp(dist.irecv, ember.zeros(2), prv, tag=9)]
for w in dist.batch_isend_irecv(ops):
    w.wait()
close(ops[1].tensor, [prv] * 2, "batch_isend_irecv")
if R == 0:
    got = set()
    for _ in range(W - 1):
        t = ember.zeros(1, dtype=ember.int64)
        src = dist.recv(t)  # any source
        assert t.item() == src * 11, (t.item(), src)
        got.add(src)
    assert got == set(range(1, W))
    t = ember.zeros(1, dtype=ember.int64)
    w = dist.irecv(t, tag=4)  # any source, non-blocking
    w.wait()
    assert t.item() == 77 and w.source == 1
else:
    dist.send(ember.tensor([R * 11]), dst=0)
    if R == 1:
        dist.send(ember.tensor([77]), dst=0, tag=4)
strided = ember.zeros(4, 2)
if R == 0:
    dist.send(ember.tensor([1.0, 2.0, 3.0, 4.0]), dst=1)
elif R == 1:
    dist.recv(strided[:, 1], src=0)
    close(strided, [[0, 1], [0, 2], [0, 3], [0, 4]], "recv into a strided view")

# picklable objects
objs = [None] * W
dist.all_gather_object(objs, {"rank": R, "name": f"r{R}"})
assert objs == [{"rank": r, "name": f"r{r}"} for r in range(W)], objs
lst = [R, "x", None] if R == 1 else [None, None, None]
dist.broadcast_object_list(lst, src=1)
assert lst == [1, "x", None], lst
gathered = [None] * W if R == 0 else None
dist.gather_object(("hi", R), gathered, dst=0)
if R == 0:
    assert gathered == [("hi", r) for r in range(W)]
out = [None]
dist.scatter_object_list(out, [{"for": r} for r in range(W)] if R == 0 else None, src=0)
assert out == [{"for": R}], out

# subgroups: only members take part; non-members get NON_GROUP_MEMBER and no-ops
evens = dist.new_group([r for r in range(W) if r % 2 == 0])
solo = dist.new_group([W - 1])
if R % 2 == 0:
    assert dist.get_world_size(evens) == len(range(0, W, 2)) and dist.get_rank(evens) == R // 2
    t = ember.ones(2)
    dist.all_reduce(t, group=evens)
    close(t, [len(range(0, W, 2))] * 2, "subgroup all_reduce")
    assert dist.get_process_group_ranks(evens) == list(range(0, W, 2))
    assert dist.get_global_rank(evens, 0) == 0 and dist.get_group_rank(evens, 0) == 0
else:
    assert evens is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(evens) == -1
    assert dist.all_reduce(ember.ones(2), group=evens) is None
if R == W - 1:
    t = ember.full((2,), 3.0)
    dist.all_reduce(t, group=solo)
    close(t, [3, 3], "one-rank group")
    dist.destroy_process_group(solo)
dist.destroy_process_group(evens)

# async barrier and the default-group barrier
w = dist.barrier(async_op=True)
w.wait()
dist.barrier()
dist.monitored_barrier(timeout=30)

# the base class's object collectives (what a backend gets for free) work over MPI's tensors
pg = dist.group.WORLD
assert dist.ProcessGroup.allgather_object(pg, ("base", R)) == [("base", r) for r in range(W)]
assert dist.ProcessGroup.allgather_ints(pg, [R, 5]) == [[r, 5] for r in range(W)]
assert dist.ProcessGroup.broadcast_object(pg, {"k": R}, 1) == {"k": 1}

# checks off: the same results without the agreement exchange
dist.set_collective_checks(False)
t = ember.ones(3) * (R + 1)
dist.all_reduce(t)
close(t, [sum(range(1, W + 1))] * 3, "unchecked all_reduce")
dist.set_collective_checks(True)

dist.destroy_process_group()
assert not dist.is_initialized()
dist.init_process_group(backend="gloo")  # PyTorch scripts' cpu backend is served by MPI
assert dist.get_backend() == "mpi"
t = ember.ones(1)
dist.all_reduce(t)
close(t, [W], "after re-init")
dist.destroy_process_group()
print(f"rank {R}: collectives ok", flush=True)
