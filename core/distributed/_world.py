"""Process-group state: ``init_process_group``, ``new_group``, ``destroy_process_group`` and the
rank/size queries.

The processes of a job and their ranks come from MPI (``mpiexec`` or ``ember.distributed.run``
starts them). Collective backends are the classes registered through the
``ember_register_collectives`` hook; a group holds one backend per device type it serves.
"""
from __future__ import annotations

import os
from datetime import timedelta
from typing import Sequence

from . import _faults, _mpi_env
from ._store import LocalStore, MPIStore
from .process_group import ProcessGroup
from .. import _plugins
from ._composite import CompositeGroup
from ._check import agree_objects

NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                   "init_process_group.")

# backend names that PyTorch scripts pass and ember serves with another engine
_ALIASES = {"gloo": "cpu", "ucc": "cpu"}


class _State:
    default: ProcessGroup | None = None
    groups: list = []            # every live group made by this process (the default first)
    world_rank = 0
    world_size = 1
    uses_mpi = False
    checks = os.environ.get("EMBER_DISTRIBUTED_CHECKS", "1").strip().lower() not in ("0", "false", "off", "no")
    backend_spec: dict = {}       # device type -> backend name, of the default group
    timeout = None


state = _State()


class _NonMember:
    """What ``new_group`` returns on a process that is not one of the group's ranks."""

    def __repr__(self) -> str:
        return "<ember.distributed.GroupMember.NON_GROUP_MEMBER>"

    def __bool__(self) -> bool:
        return False


NON_GROUP_MEMBER = _NonMember()


class GroupMember:
    """``GroupMember.WORLD`` (the default group, None before ``init_process_group``) and
    ``GroupMember.NON_GROUP_MEMBER`` as in PyTorch; ``ember.distributed.group`` is this class."""

    NON_GROUP_MEMBER = NON_GROUP_MEMBER

    class _World:
        def __get__(self, obj, cls):
            return state.default

    WORLD = _World()


group = GroupMember


# -- collective backends ---------------------------------------------------------------------
def registered_collectives() -> dict:
    """name -> ``{"loader", "device_types", "plugin"}`` of every registered collective backend."""
    _plugins.load()
    return dict(_plugins.collectives)


def _backend_class(name: str):
    info = registered_collectives()[name]
    cls = info.get("class")
    if cls is None:
        cls = _plugins._import_object(info["loader"])
        if not (isinstance(cls, type) and issubclass(cls, ProcessGroup)):
            raise TypeError(f"collective backend {name!r}: {info['loader']} is not an ember.distributed.ProcessGroup "
                            "subclass")
        info["class"] = cls
        _plugins.collectives[name]["class"] = cls
    return cls


def _availability(name: str) -> tuple:
    try:
        return _backend_class(name).availability()
    except Exception as e:
        return False, f"failed to load: {type(e).__name__}: {e}"


def _describe_backends() -> str:
    rows = []
    for name, info in registered_collectives().items():
        ok, why = _availability(name)
        rows.append(f"{name} (devices {', '.join(info['device_types'])}): "
                    + ("available" if ok else f"unavailable: {why}"))
    return "; ".join(rows) or "none registered"


def _resolve_backend(backend) -> dict:
    """device type -> collective backend name, from ``init_process_group(backend=...)``."""
    colls = registered_collectives()
    if backend is None:
        spec: dict = {}
        for name, info in colls.items():  # registration order: built-ins first
            if _availability(name)[0]:
                for dt in info["device_types"]:
                    spec.setdefault(dt, name)
        if not spec:
            raise RuntimeError(f"init_process_group: no collective backend is available ({_describe_backends()}). "
                               f"Install MPI with: {_mpi_env.INSTALL_HINT}; then {_mpi_env.LAUNCH_HINT}")
        return spec
    if not isinstance(backend, str):
        raise TypeError(f"init_process_group: backend must be a string or None, got {type(backend).__name__}")
    spec = {}
    for part in backend.lower().replace(" ", "").split(","):
        dev, _, name = part.rpartition(":")
        target = _ALIASES.get(name)
        if target is not None:  # "gloo": whichever backend serves cpu tensors (MPI)
            name = next((n for n, i in colls.items() if target in i["device_types"] and _availability(n)[0]),
                        next((n for n, i in colls.items() if target in i["device_types"]), name))
        if name not in colls:
            raise ValueError(f"init_process_group: unknown backend {backend!r}; registered collective backends: "
                             f"{_describe_backends()}")
        ok, why = _availability(name)
        if not ok:
            hint = f". Install it with: {_mpi_env.INSTALL_HINT}; then {_mpi_env.LAUNCH_HINT}" if name == "mpi" else ""
            raise RuntimeError(f"init_process_group: backend '{name}' is unavailable: {why}{hint}")
        for dt in ([dev] if dev else colls[name]["device_types"]):
            spec[dt] = name
    return spec


def _make_group(spec: dict, ranks: Sequence[int]) -> ProcessGroup:
    store_cls = MPIStore if state.uses_mpi else LocalStore
    members = {}
    for name in dict.fromkeys(spec.values()):
        members[name] = _backend_class(name).create(store_cls(ranks, state.world_rank), list(ranks))
    if len(members) == 1:
        pg = next(iter(members.values()))
    else:
        pg = CompositeGroup({dt: members[n] for dt, n in spec.items()}, ranks, state.world_rank)
    pg._ember_seq = 0
    pg._ember_spec = dict(spec)
    state.groups.append(pg)
    return pg


# -- the world ------------------------------------------------------------------------------------
def _discover_world(spec: dict) -> None:
    launched, var = _mpi_env.launcher_world_size()
    if _mpi_env.mpi4py_installed():
        MPI = _mpi_env.mpi()
        comm = MPI.COMM_WORLD
        state.world_rank, state.world_size, state.uses_mpi = comm.Get_rank(), comm.Get_size(), True
        if launched is not None and launched > 1 and state.world_size == 1:
            how = ("torchrun sets these; ember.distributed runs over MPI instead" if var == "WORLD_SIZE" else
                   "the mpiexec that started it belongs to another MPI than mpi4py's "
                   f"({MPI.Get_library_version().splitlines()[0].strip()})")
            raise RuntimeError(
                f"init_process_group: the launcher started {launched} processes ({var}={launched}) but MPI sees only "
                f"this one: {how}. Use the mpiexec installed next to this python "
                f"({_mpi_env.find_mpiexec() or 'pip install mpich'}), e.g. {_mpi_env.LAUNCH_HINT}")
        return
    if launched is not None and launched > 1 or any(n == "mpi" for n in spec.values()):
        _mpi_env.mpi()  # raises: how to install mpi4py and how to launch
    state.world_rank, state.world_size, state.uses_mpi = 0, 1, False


def init_process_group(backend: str | None = None, init_method: str | None = None, timeout: timedelta | None = None,
                       world_size: int = -1, rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Join the job's default process group (PyTorch's ``torch.distributed.init_process_group``).

    ``backend``: ``"mpi"`` (cpu and opencl tensors), ``"nccl"`` (cuda, from the cuda backend),
    ``None`` (every available backend, each for the device types it serves), a per-device string
    such as ``"cpu:mpi,cuda:nccl"``, or ``"gloo"`` (served by MPI). The processes, their ranks and
    the world size come from the MPI launcher (``mpiexec -n N python train.py`` or
    ``python -m ember.distributed.run --nproc N train.py``); ``init_method``, ``store`` and
    ``group_name`` are accepted for compatibility and not needed. Under plain ``python`` the job is
    one process (world size 1), which PyTorch refuses but is handy for running the same script
    alone. ``world_size``/``rank``, when given, must match the launcher's.
    """
    if state.default is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    if timeout is not None and not isinstance(timeout, (timedelta, int, float)):
        raise TypeError(f"init_process_group: timeout must be a datetime.timedelta, got {type(timeout).__name__}")
    if init_method not in (None, "env://") and not str(init_method).startswith(("tcp://", "file://", "env://")):
        raise ValueError(f"init_process_group: unsupported init_method {init_method!r}")
    spec = _resolve_backend(backend)
    _discover_world(spec)
    if world_size not in (-1, None) and int(world_size) != state.world_size:
        raise ValueError(f"init_process_group: world_size={world_size} but the launcher started {state.world_size} "
                         f"process{'es' if state.world_size != 1 else ''}; {_mpi_env.LAUNCH_HINT}")
    if rank not in (-1, None) and int(rank) != state.world_rank:
        raise ValueError(f"init_process_group: rank={rank} but this process is rank {state.world_rank} of the "
                         "launcher's job (MPI assigns ranks; leave rank unset)")
    state.timeout = timeout
    state.backend_spec = spec
    state.default = _make_group(spec, range(state.world_size))
    if state.uses_mpi and state.world_size > 1:
        _faults.install()


def is_initialized() -> bool:
    """Whether the default process group exists."""
    return state.default is not None


def is_available() -> bool:
    """Whether ember.distributed can run here: some collective backend is available (cheap; does
    not start MPI)."""
    try:
        return any(_availability(n)[0] for n in registered_collectives())
    except Exception:
        return False


def is_mpi_available() -> bool:
    return _mpi_env.availability()[0]


def is_nccl_available() -> bool:
    return "nccl" in registered_collectives() and _availability("nccl")[0]


def is_gloo_available() -> bool:
    """False: ember has no gloo; ``backend="gloo"`` is served by MPI."""
    return False


def is_torchelastic_launched() -> bool:
    return False


def default_group() -> ProcessGroup:
    if state.default is None:
        raise ValueError(NOT_INITIALIZED)
    return state.default


def resolve(group) -> ProcessGroup | None:
    """The ProcessGroup for a ``group=`` argument; None for a process outside it."""
    if group is None or group is GroupMember.WORLD:
        return default_group()
    if group is NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"expected a process group made by new_group (or None), got {type(group).__name__}")
    if group not in state.groups:
        raise ValueError("this process group has been destroyed or belongs to an earlier init_process_group")
    return group


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (default: the world); -1 if it is not a member."""
    pg = resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None) -> int:
    """The number of processes in ``group`` (default: the world); -1 if this one is not a member."""
    pg = resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None) -> str:
    """The backend name of ``group`` (``"mpi"``; ``"cpu:mpi, cuda:nccl"`` for several)."""
    pg = resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    spec = pg._ember_spec
    names = set(spec.values())
    if len(names) == 1:
        return next(iter(names))
    return ", ".join(f"{dt}:{n}" for dt, n in spec.items())


def get_process_group_ranks(group) -> list:
    """The global ranks of ``group``'s members, in group-rank order."""
    pg = resolve(group)
    if pg is None:
        raise ValueError("get_process_group_ranks: this process is not a member of the group")
    return list(pg.ranks)


def get_global_rank(group, group_rank: int) -> int:
    """The global rank of ``group``'s member ``group_rank``."""
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"get_global_rank: group rank {group_rank} is not in the group (size {len(ranks)})")
    return ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    """The rank in ``group`` of the process with global rank ``global_rank``."""
    ranks = get_process_group_ranks(group)
    if global_rank not in ranks:
        raise ValueError(f"get_group_rank: global rank {global_rank} is not part of the group {ranks}")
    return ranks.index(global_rank)


def new_group(ranks: Sequence[int] | None = None, timeout=None, backend: str | None = None, pg_options=None,
              use_local_synchronization: bool = False, group_desc: str | None = None, device_id=None):
    """A process group of the processes with global ``ranks`` (default: all). Every process of
    the job must call it, in the same order, with the same ranks; non-members get
    ``GroupMember.NON_GROUP_MEMBER``."""
    world = default_group()
    if ranks is None:
        ranks = list(range(state.world_size))
    try:
        ranks = sorted(int(r) for r in ranks)
    except (TypeError, ValueError):
        raise TypeError(f"new_group: ranks must be a sequence of ints, got {ranks!r}") from None
    bad = [r for r in ranks if not 0 <= r < state.world_size]
    if bad or len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: ranks {ranks} must be distinct global ranks in [0, {state.world_size})")
    if not ranks:
        raise ValueError("new_group: ranks must not be empty")
    spec = _resolve_backend(backend) if backend is not None else dict(state.backend_spec)
    if state.checks and not use_local_synchronization:
        agree_objects(world, "new_group", (ranks, sorted(spec.items())))
    if state.world_rank not in ranks:
        return NON_GROUP_MEMBER
    return _make_group(spec, ranks)


def destroy_process_group(group=None) -> None:
    """Destroy ``group``, or every group and the default one (then ``init_process_group`` may be
    called again)."""
    if group is None or group is GroupMember.WORLD:
        if state.default is None:
            raise ValueError(NOT_INITIALIZED)
        for pg in reversed(state.groups):
            pg.destroy()
        state.groups = []
        state.default = None
        return
    if group is NON_GROUP_MEMBER:
        return
    pg = resolve(group)
    pg.destroy()
    state.groups.remove(pg)


def set_collective_checks(enabled: bool) -> None:
    """Turn the cross-rank argument checks of the collectives on (the default) or off.

    With checks on, each collective first exchanges a few integers (the shapes, dtypes, op and
    root of every rank) so that mismatched calls raise on every rank instead of corrupting data
    or hanging; that costs one small allgather per call. Every rank must make the same choice
    (``EMBER_DISTRIBUTED_CHECKS=0`` in the environment sets it for the whole job).
    """
    state.checks = bool(enabled)


def collective_checks_enabled() -> bool:
    return state.checks
