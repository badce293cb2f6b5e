"""Object exchange among the members of a group being created (``ProcessGroup.create``'s store).

Built over an MPI sub-communicator made on first use (the MPI backend never needs one), or a
trivial one when the job is a single process without MPI.
"""
from __future__ import annotations

from typing import Sequence

from ._mpi_env import mpi


class Store:
    """``rank``/``size`` among the members, ``global_rank``, and two collective object
    exchanges over exactly the members (small pickled python objects)."""

    def __init__(self, ranks: Sequence[int], global_rank: int) -> None:
        self.ranks = tuple(ranks)
        self.global_rank = global_rank
        self.rank = self.ranks.index(global_rank)
        self.size = len(self.ranks)

    def allgather_object(self, obj) -> list:
        raise NotImplementedError

    def broadcast_object(self, obj, root: int = 0):
        raise NotImplementedError


class LocalStore(Store):
    """The store of a one-process job."""

    def allgather_object(self, obj) -> list:
        return [obj]

    def broadcast_object(self, obj, root: int = 0):
        return obj


class MPIStore(Store):
    def __init__(self, ranks: Sequence[int], global_rank: int) -> None:
        super().__init__(ranks, global_rank)
        self._comm = None

    def _c(self):
        if self._comm is None:
            world = mpi().COMM_WORLD
            if list(self.ranks) == list(range(world.Get_size())):
                self._comm = world.Dup()
            else:
                g = world.Get_group().Incl(list(self.ranks))
                self._comm = world.Create_group(g)
                g.Free()
        return self._comm

    def allgather_object(self, obj) -> list:
        return self._c().allgather(obj)

    def broadcast_object(self, obj, root: int = 0):
        return self._c().bcast(obj, root=root)

    def close(self) -> None:
        if self._comm is not None and not mpi().Is_finalized():
            self._comm.Free()
        self._comm = None
