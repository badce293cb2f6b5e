"""``ember.distributed``: process groups and collectives over MPI (cpu and opencl tensors) and
NCCL (cuda, from the cuda backend), with PyTorch's ``torch.distributed`` API.

Launch N processes with ``python -m ember.distributed.run --nproc N train.py`` (or ``mpiexec -n
N python train.py``), then in the script::

    import ember as torch
    import ember.distributed as dist

    dist.init_process_group()            # rank and world size come from MPI
    t = torch.ones(4) * dist.get_rank()
    dist.all_reduce(t, op=dist.ReduceOp.SUM)

Collective backends are plugins (``ember_register_collectives``); the MPI one is built in. See
``docs/distributed.md`` for the guide, and :class:`ProcessGroup` for what a backend implements.
Importing this package does not start MPI; ``init_process_group`` does.
"""
from __future__ import annotations

import importlib as _importlib

# Names are imported on first use, so that loading the built-in plugin (``ember.distributed._plugin``,
# which every process does with its first tensor) costs nothing.
_EXPORTS = {
    "_collectives": ("P2POp", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "barrier",
                     "batch_isend_irecv", "broadcast", "broadcast_object_list", "gather", "gather_object", "irecv",
                     "isend", "monitored_barrier", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor",
                     "scatter", "scatter_object_list", "send"),
    "_world": ("GroupMember", "collective_checks_enabled", "destroy_process_group", "get_backend", "get_global_rank",
               "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group",
               "init_process_group", "is_available", "is_gloo_available", "is_initialized", "is_mpi_available",
               "is_nccl_available", "is_torchelastic_launched", "new_group", "set_collective_checks"),
    "process_group": ("CompletedWork", "ProcessGroup", "ReduceOp", "Work"),
}
_WHERE = {name: mod for mod, names in _EXPORTS.items() for name in names}
# old spellings kept by PyTorch
_ALIASES = {"all_gather_base": "all_gather_into_tensor", "reduce_scatter_base": "reduce_scatter_tensor"}


def __getattr__(name: str):
    target = _ALIASES.get(name, name)
    mod = _WHERE.get(target)
    if mod is None:
        raise AttributeError(f"module 'ember.distributed' has no attribute {name!r}")
    value = getattr(_importlib.import_module(f"{__name__}.{mod}"), target)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_WHERE) | set(_ALIASES))


class Backend(str):
    """Backend names, as ``torch.distributed.Backend``: ``Backend.MPI == "mpi"``."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"

    def __new__(cls, name: str) -> "Backend":
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name!r}")
        return str.__new__(cls, name.lower())


__all__ = [
    "init_process_group", "destroy_process_group", "is_initialized", "is_available", "is_mpi_available",
    "is_nccl_available", "is_gloo_available", "get_rank", "get_world_size", "get_backend", "new_group",
    "get_process_group_ranks", "get_global_rank", "get_group_rank", "group", "GroupMember", "Backend",
    "ReduceOp", "Work", "ProcessGroup", "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
    "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "barrier", "monitored_barrier", "send", "recv",
    "isend", "irecv", "P2POp", "batch_isend_irecv", "all_gather_object", "broadcast_object_list", "gather_object",
    "scatter_object_list", "set_collective_checks",
]
