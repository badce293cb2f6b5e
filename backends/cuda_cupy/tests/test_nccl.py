"""The NCCL process group's bookkeeping on the fake NCCL: two ranks as two threads of this process,
each on its own (fake) GPU, the unique id shared through the group's store as in a real job."""
import threading

import numpy as np
import pytest

import ember
import ember.distributed
from ember.distributed.process_group import ReduceOp


class _ThreadStore:
    """``ProcessGroup.create``'s store for ranks that are threads."""

    def __init__(self, shared, rank, size):
        self.shared, self.rank, self.size, self.global_rank = shared, rank, size, rank

    def broadcast_object(self, obj, root=0):
        if self.rank == root:
            self.shared["obj"] = obj
        self.shared["barrier"].wait()
        v = self.shared["obj"]
        self.shared["barrier"].wait()
        return v

    def allgather_object(self, obj):
        raise NotImplementedError


def _ranks(fn, n=2):
    """Run ``fn(pg, rank)`` on n threads, one per fake GPU; returns the results by rank."""
    from ember_cuda_cupy.nccl import NCCLProcessGroup
    shared = {"barrier": threading.Barrier(n, timeout=10)}
    out, errs = [None] * n, []

    def body(r):
        try:
            ember.cuda.set_device(r)
            pg = NCCLProcessGroup.create(_ThreadStore(shared, r, n), list(range(n)))
            out[r] = fn(pg, r)
            pg.destroy()
        except BaseException as e:  # reported below
            errs.append(e)
            shared["barrier"].abort()
    ts = [threading.Thread(target=body, args=(r,)) for r in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    if errs:
        raise errs[0]
    return out


def _dev(r):
    return f"cuda:{r}"


def test_registered_for_cuda_and_available():
    import ember_cuda_cupy
    seen = []
    ember_cuda_cupy.ember_register_collectives(lambda *args: seen.append(args))
    assert seen == [("nccl", "ember_cuda_cupy.nccl:NCCLProcessGroup", ("cuda",))]
    assert ember.distributed.is_nccl_available()


@pytest.mark.parametrize("dtype", [ember.float32, ember.bfloat16, ember.int16, ember.int64, ember.float16])
def test_allreduce_sum_and_avg(dtype):
    def fn(pg, r):
        t = ember.tensor([1.0 + r, 2.0, 3.0 * r], device=_dev(r)).to(dtype)
        v = t._version[0]
        pg.allreduce(t, ReduceOp.SUM)
        s = t.tolist()
        assert t._version[0] == v + 1
        if dtype.is_floating_point:
            u = ember.tensor([2.0 * r, 4.0], device=_dev(r)).to(dtype)
            w = pg.allreduce(u, ReduceOp.AVG, async_op=True)
            w.wait()
            assert w.is_completed()
            return s, u.tolist()
        return s, None
    res = _ranks(fn)
    assert res[0][0] == res[1][0] == [3, 4, 3]
    if dtype.is_floating_point:
        assert res[0][1] == [1.0, 4.0]


def test_bool_reductions_and_refused_bitwise_ops():
    def fn(pg, r):
        t = ember.tensor([r == 0, False, True], device=_dev(r))
        pg.allreduce(t, ReduceOp.SUM)  # logical or
        a = ember.tensor([r == 0, True], device=_dev(r))
        pg.allreduce(a, ReduceOp.PRODUCT)  # logical and
        with pytest.raises(RuntimeError, match="BAND is not supported"):
            pg.allreduce(ember.ones(2, dtype=ember.int32, device=_dev(r)), ReduceOp.BAND)
        return t.tolist(), a.tolist()
    res = _ranks(fn)
    assert res[0] == res[1] == ([True, False, True], [False, True])


def test_broadcast_reduce_gathers_and_scatter():
    def fn(pg, r):
        b = ember.full((3,), float(r + 5), device=_dev(r))
        pg.broadcast(b, 1)
        red = ember.full((2,), float(r + 1), device=_dev(r))
        pg.reduce(red, 0, ReduceOp.MAX)
        outs = [ember.empty(2, device=_dev(r)) for _ in range(2)]
        pg.allgather(outs, ember.full((2,), float(r), device=_dev(r)))
        flat = ember.empty(4, dtype=ember.bfloat16, device=_dev(r))
        pg.allgather_into_tensor(flat, ember.full((2,), float(r + 1), dtype=ember.bfloat16, device=_dev(r)))
        rs = ember.empty(2, device=_dev(r))
        pg.reduce_scatter_tensor(rs, ember.arange(4.0, device=_dev(r)), ReduceOp.SUM)
        sc = ember.empty(2, device=_dev(r))
        pg.scatter(sc, [ember.full((2,), 10.0 + i, device=_dev(r)) for i in range(2)] if r == 0 else None, 0)
        return b.tolist(), red.tolist(), [o.tolist() for o in outs], flat.tolist(), rs.tolist(), sc.tolist()
    res = _ranks(fn)
    for r in range(2):
        b, red, outs, flat, rs, sc = res[r]
        assert b == [6.0] * 3 and outs == [[0.0, 0.0], [1.0, 1.0]] and flat == [1.0, 1.0, 2.0, 2.0]
        assert rs == [[0.0, 2.0], [4.0, 6.0]][r] and sc == [10.0 + r] * 2
    assert res[0][1] == [2.0, 2.0] and res[1][1] == [2.0, 2.0]  # reduce leaves non-roots unchanged


def test_send_recv_and_barrier():
    def fn(pg, r):
        if r == 0:
            pg.send(ember.tensor([7, 8], device=_dev(r)), 1)
            got = None
        else:
            t = ember.zeros(2, dtype=ember.int64, device=_dev(r))
            w = pg.recv(t, 0)
            assert w.source == 0
            got = t.tolist()
        pg.barrier()
        with pytest.raises(RuntimeError, match="source rank"):
            pg.recv(ember.zeros(1, device=_dev(r)), None)
        return got
    assert _ranks(fn)[1] == [7, 8]


def test_one_communicator_per_group_on_the_rank_device():
    from cupy.cuda import nccl
    nccl.log.clear()

    def fn(pg, r):
        pg.allreduce(ember.ones(1, device=_dev(r)), ReduceOp.SUM)
        pg.allreduce(ember.ones(1, device=_dev(r)), ReduceOp.SUM)
        with pytest.raises(RuntimeError, match="one GPU per rank"):
            pg.allreduce(ember.ones(1, device=_dev(1 - r)), ReduceOp.SUM)
        return None
    _ranks(fn)
    inits = [e for e in nccl.log if e[1] == "init"]
    assert sorted((e[0], e[4]) for e in inits) == [(0, 0), (1, 1)]  # rank r opened its comm on cuda:r, once
    assert all(e[3] == nccl.NCCL_FLOAT32 for e in nccl.log if e[1] == "allReduce")


def test_object_collectives_ride_on_the_tensor_ones():
    def fn(pg, r):
        pg.allreduce(ember.ones(1, device=_dev(r)), ReduceOp.SUM)
        return pg.broadcast_object({"rank": r, "arr": np.arange(3)}, 1)["rank"]
    assert _ranks(fn) == [1, 1]
