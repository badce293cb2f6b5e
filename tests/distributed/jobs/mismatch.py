"""Mismatched calls across 2 ranks raise on every rank, leave the tensors unchanged, and leave
the group usable (prints 'mismatch ok' on each rank)."""
import ember
import ember.distributed as dist
from ember.distributed import ReduceOp

dist.init_process_group()
R, W = dist.get_rank(), dist.get_world_size()
assert W == 2


def expect(exc_type, fragments, fn):
    try:
        fn()
    except exc_type as e:
        msg = str(e)
        for f in fragments:
            assert f in msg, (f, msg)
        return msg
    raise AssertionError(f"rank {R}: expected {exc_type.__name__} containing {fragments}")


def still_works():
    t = ember.ones(2)
    dist.all_reduce(t)
    assert t.tolist() == [2.0, 2.0], t


# shapes differ: every rank raises, naming both ranks' tensors; nothing is transferred
t = ember.full((4 + R,), float(R + 1))
expect(RuntimeError, ["all_reduce", "rank 0: float32[4]", "rank 1: float32[5]", "same shape and dtype"],
       lambda: dist.all_reduce(t))
assert t.tolist() == [float(R + 1)] * (4 + R)
still_works()

# dtypes differ
t = ember.ones(3, dtype=ember.float32 if R == 0 else ember.float64)
expect(RuntimeError, ["broadcast", "float32[3]", "float64[3]"], lambda: dist.broadcast(t, src=0))
still_works()

# different collectives at the same point
msg = expect(RuntimeError, ["not making the same collective call", "rank 0: all_reduce", "rank 1: broadcast"],
             lambda: dist.all_reduce(ember.ones(2)) if R == 0 else dist.broadcast(ember.ones(2), src=0))
still_works()

# op and root disagree
expect(RuntimeError, ["disagree on the op", "SUM", "MAX"],
       lambda: dist.all_reduce(ember.ones(2), op=ReduceOp.SUM if R == 0 else ReduceOp.MAX))
expect(RuntimeError, ["disagree on the root"], lambda: dist.broadcast(ember.ones(2), src=R))
still_works()

# all_gather: rank 1's output list does not match what the ranks contribute
outs = [ember.zeros(3), ember.zeros(3 if R == 0 else 4)]
expect(RuntimeError, ["all_gather", "tensor_list entries on rank 1", "rank 0: float32[3]"],
       lambda: dist.all_gather(outs, ember.ones(3)))
assert all(o.sum().item() == 0 for o in outs)
still_works()

# one rank's own arguments are invalid: it gets the precise error, the other one is told
out = ember.zeros(4 if R == 0 else 5)
if R == 1:
    expect(ValueError, ["world_size times input tensor size", "float32[5]"],
           lambda: dist.all_gather_into_tensor(out, ember.ones(2)))
else:
    expect(RuntimeError, ["rank 1 of the group passed invalid arguments"],
           lambda: dist.all_gather_into_tensor(out, ember.ones(2)))
still_works()

# reduce_scatter_tensor sizes differ across ranks
expect(RuntimeError, ["reduce_scatter_tensor", "output tensors"],
       lambda: dist.reduce_scatter_tensor(ember.zeros(2 + R), ember.zeros(2 * (2 + R))))
still_works()

# scatter: the root's list does not match rank 1's output
o = ember.zeros(2 if R == 0 else 3)
expect(RuntimeError, ["scatter_list entries on rank 0"],
       lambda: dist.scatter(o, [ember.ones(2), ember.ones(2)] if R == 0 else None, src=0))
still_works()

# gather_list given on a non-destination rank
expect((ValueError, RuntimeError), ["gather"],
       lambda: dist.gather(ember.ones(1), [ember.zeros(1), ember.zeros(1)], dst=0))
still_works()

# averaging integers and bitwise ops on floats are refused on every rank
expect(TypeError, ["ReduceOp.AVG needs a floating-point tensor", "int64"],
       lambda: dist.all_reduce(ember.ones(2, dtype=ember.int64), op=ReduceOp.AVG))
expect(TypeError, ["BAND needs an integer or bool tensor"],
       lambda: dist.all_reduce(ember.ones(2), op=ReduceOp.BAND))
still_works()

# point to point: a receiver with another shape or dtype raises and keeps its values; the
# channel stays in order (the refused message is consumed)
if R == 0:
    dist.send(ember.ones(3), dst=1)
    dist.send(ember.ones(3, dtype=ember.int32), dst=1, tag=1)
    dist.send(ember.arange(4.0), dst=1, tag=2)
    dist.isend(ember.ones(2), dst=1, tag=3).wait()
else:
    t = ember.full((4,), 5.0)
    expect(RuntimeError, ["rank 0 sent float32[3]", "receives into float32[4]", "left unchanged"],
           lambda: dist.recv(t, src=0))
    assert t.tolist() == [5.0] * 4
    t3 = ember.zeros(3)
    expect(RuntimeError, ["int32[3]", "float32[3]"], lambda: dist.recv(t3, src=0, tag=1))
    assert dist.recv(t, src=0, tag=2) == 0 and t.tolist() == [0.0, 1.0, 2.0, 3.0]
    t5 = ember.full((5,), 9.0)
    w = dist.irecv(t5, src=0, tag=3)
    expect(RuntimeError, ["irecv", "float32[2]", "float32[5]"], w.wait)
    assert t5.tolist() == [9.0] * 5
still_works()

# new_group with different ranks on different processes
expect(RuntimeError, ["new_group", "disagree"], lambda: dist.new_group([R]))
still_works()

# argument errors raised before any communication, on both ranks alike
expect(ValueError, ["src=5 is not a member of the group"], lambda: dist.broadcast(ember.ones(1), src=5))
expect(ValueError, ["should not be the same as the rank of the current process"],
       lambda: dist.send(ember.ones(1), dst=R))
expect(TypeError, ["op must be an ember.distributed.ReduceOp"], lambda: dist.all_reduce(ember.ones(1), op="mean"))
expect(TypeError, ["tensor must be a Tensor"], lambda: dist.all_reduce([1.0, 2.0]))
expect(ValueError, ["tensor_list has 1 tensors but the group has 2 ranks"],
       lambda: dist.all_gather([ember.zeros(1)], ember.ones(1)))
still_works()
expect(RuntimeError, ["initialize the default process group twice"], lambda: dist.init_process_group())

dist.destroy_process_group()
print(f"rank {R}: mismatch ok", flush=True)
