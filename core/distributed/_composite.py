"""A group served by several backends, one per device type (``init_process_group()`` with MPI
and NCCL both available: cpu/opencl tensors go through MPI, cuda tensors through NCCL)."""
from __future__ import annotations

from .process_group import ProcessGroup, ReduceOp, Work


class CompositeGroup(ProcessGroup):
    name = "composite"

    def __init__(self, members: dict, ranks, world_rank: int) -> None:
        ranks = tuple(ranks)
        super().__init__(ranks.index(world_rank), len(ranks), ranks)
        self.members = members  # device type -> ProcessGroup
        self.device_types = tuple(members)

    def _for(self, t) -> ProcessGroup:
        return self.members[t._device._type]

    def _host(self) -> ProcessGroup:
        """The member used for host-side exchanges (cpu's when there is one)."""
        return self.members.get("cpu") or next(iter(self.members.values()))

    @property
    def accepts_strided(self) -> bool:  # the front end asks per call; be conservative
        return all(getattr(m, "accepts_strided", False) for m in self.members.values())

    def destroy(self) -> None:
        for m in dict.fromkeys(self.members.values()):
            m.destroy()

    def allreduce(self, tensor, op: ReduceOp, async_op: bool = False) -> Work:
        return self._for(tensor).allreduce(tensor, op, async_op)

    def broadcast(self, tensor, root: int, async_op: bool = False) -> Work:
        return self._for(tensor).broadcast(tensor, root, async_op)

    def reduce(self, tensor, root: int, op: ReduceOp, async_op: bool = False) -> Work:
        return self._for(tensor).reduce(tensor, root, op, async_op)

    def allgather(self, outputs, tensor, async_op: bool = False) -> Work:
        return self._for(tensor).allgather(outputs, tensor, async_op)

    def allgather_into_tensor(self, output, tensor, async_op: bool = False) -> Work:
        return self._for(tensor).allgather_into_tensor(output, tensor, async_op)

    def reduce_scatter_tensor(self, output, tensor, op: ReduceOp, async_op: bool = False) -> Work:
        return self._for(tensor).reduce_scatter_tensor(output, tensor, op, async_op)

    def gather(self, outputs, tensor, root: int, async_op: bool = False) -> Work:
        return self._for(tensor).gather(outputs, tensor, root, async_op)

    def scatter(self, output, inputs, root: int, async_op: bool = False) -> Work:
        return self._for(output).scatter(output, inputs, root, async_op)

    def send(self, tensor, peer: int, tag: int = 0, async_op: bool = False) -> Work:
        return self._for(tensor).send(tensor, peer, tag, async_op)

    def recv(self, tensor, peer, tag: int = 0, async_op: bool = False) -> Work:
        return self._for(tensor).recv(tensor, peer, tag, async_op)

    def barrier(self, async_op: bool = False) -> Work:
        return self._host().barrier(async_op)

    def object_device(self):
        return self._host().object_device()

    def allgather_ints(self, values, timeout=None) -> list:
        return self._host().allgather_ints(values, timeout)

    def allgather_object(self, obj) -> list:
        return self._host().allgather_object(obj)

    def broadcast_object(self, obj, root: int):
        return self._host().broadcast_object(obj, root)

    def gather_object(self, obj, root: int):
        return self._host().gather_object(obj, root)

    def scatter_object(self, objs, root: int):
        return self._host().scatter_object(objs, root)
