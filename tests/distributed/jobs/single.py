"""Plain ``python single.py`` (no launcher): a one-process world where collectives are identities."""
import ember
import ember.distributed as dist

dist.init_process_group()
assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "mpi")
t = ember.arange(4.0)
dist.all_reduce(t, op=dist.ReduceOp.AVG)
dist.broadcast(t, src=0)
assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
outs = [ember.zeros(4)]
dist.all_gather(outs, t)
assert outs[0].tolist() == t.tolist()
objs = [None]
dist.all_gather_object(objs, "me")
assert objs == ["me"]
dist.barrier()
dist.destroy_process_group()
print("single ok", flush=True)
