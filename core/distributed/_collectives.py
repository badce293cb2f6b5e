"""The collective front ends (PyTorch's signatures): validate the arguments, check that every
rank agrees (:mod:`._check`), then hand the call to the group's backend for the tensors' device.

Ranks given as ``src``/``dst`` are global ranks, as in PyTorch; ``group_src``/``group_dst`` are
ranks within ``group``. With ``async_op=True`` a :class:`Work` is returned; otherwise the call
returns once the results are in the tensors. A process that is not a member of ``group`` does
nothing and gets None, as in PyTorch.
"""
from __future__ import annotations

from typing import Sequence

from .. import ops
from .._tensor import Tensor
from ..autograd import no_grad
from . import _check as C
from . import _meta
from ._world import get_backend, resolve, state
from .process_group import ProcessGroup, ReduceOp, Work


# -- argument helpers ---------------------------------------------------------------------------
def _tensor(t, op: str, name: str = "tensor") -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")


def _tensor_list(lst, op: str, name: str) -> list:
    if not isinstance(lst, (list, tuple)):
        raise TypeError(f"{op}: {name} must be a list of Tensors, got {type(lst).__name__}")
    for i, t in enumerate(lst):
        _tensor(t, op, f"{name}[{i}]")
    return list(lst)


def _op(op, name: str) -> ReduceOp:
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, str) and op.upper() in ReduceOp.__members__:
        return ReduceOp[op.upper()]
    raise TypeError(f"{name}: op must be an ember.distributed.ReduceOp (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, "
                    f"BXOR), got {op!r}")


def _device_error(pg: ProcessGroup, tensors, op: str) -> Exception | None:
    """Why these tensors cannot go through ``pg`` (mixed devices or dtypes, a device type no
    backend of the group serves), or None."""
    if not tensors:
        return None
    devs = list(dict.fromkeys(str(t._device) for t in tensors))
    if len(devs) > 1:
        return RuntimeError(f"{op}: all tensors must be on the same device, got {', '.join(devs)}")
    dts = list(dict.fromkeys(t._dtype.name for t in tensors))
    if len(dts) > 1:
        return TypeError(f"{op}: all tensors must have the same dtype, got {', '.join(dts)}")
    dtype = tensors[0]._device._type
    if dtype not in pg.device_types:
        return RuntimeError(
            f"{op}: the process group (backend '{get_backend(pg)}') moves tensors of device types "
            f"{', '.join(pg.device_types)}, not '{dtype}' ({_meta.describe(_meta.signature(tensors[0]))} on "
            f"{tensors[0]._device}); init_process_group(backend=None) picks a backend for every device type "
            "that has one installed (cuda: 'nccl')")
    return None


def _reduce_error(op: ReduceOp, t, name: str) -> Exception | None:
    cat = t._dtype
    if op is ReduceOp.AVG and not cat.is_floating_point:
        return TypeError(f"{name}: ReduceOp.AVG needs a floating-point tensor, got {cat.name} (ember does not "
                         "truncate integer averages silently; use ReduceOp.SUM and divide)")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and cat.is_floating_point:
        return TypeError(f"{name}: ReduceOp.{op.name} needs an integer or bool tensor, got {cat.name}")
    return None


def _group_rank(pg: ProcessGroup, rank, group_rank, op: str, what: str, default=None) -> int:
    if rank is not None and group_rank is not None:
        raise ValueError(f"{op}: give either {what} or group_{what}, not both")
    if group_rank is not None:
        if not isinstance(group_rank, int) or not 0 <= group_rank < pg.size():
            raise ValueError(f"{op}: group_{what}={group_rank!r} is not a rank of the group (size {pg.size()})")
        return group_rank
    if rank is None:
        rank = default
        if rank is None:
            raise ValueError(f"{op}: {what} (a global rank) or group_{what} (a rank in the group) must be given")
    if not isinstance(rank, int) or rank not in pg.ranks:
        raise ValueError(f"{op}: {what}={rank!r} is not a member of the group (its global ranks: {list(pg.ranks)})")
    return pg.ranks.index(rank)


def _first(*errors):
    return next((e for e in errors if e is not None), None)


def _agree(pg: ProcessGroup, call: C.Call) -> list | None:
    """Run the cross-rank check (or, with checks off, raise this rank's own error)."""
    if not state.checks:
        if call.local_error is not None:
            raise call.local_error
        return None
    return C.exchange(pg, call, None if state.timeout is None else _seconds(state.timeout))


# -- staging for backends that need contiguous memory ------------------------------------------
class _StagedWork(Work):
    """Copies results from contiguous staging tensors back into the caller's tensors."""

    def __init__(self, inner: Work, copies: list, outputs) -> None:
        self._inner, self._copies, self._outputs = inner, copies, tuple(outputs)

    def _copy(self) -> None:
        with no_grad():
            for dst, tmp in self._copies:
                dst.detach().copy_(tmp)
        self._copies = []

    def wait(self, timeout=None) -> bool:
        self._inner.wait(timeout)
        self._copy()
        return True

    def is_completed(self) -> bool:
        done = self._inner.is_completed()
        if done and self._copies:
            self._copy()
        return done

    def exception(self):
        return self._inner.exception()


def _stage(pg: ProcessGroup, tensors, outputs) -> tuple:
    """Contiguous stand-ins for ``tensors``; ``copies`` lists (caller's, stand-in) for outputs."""
    if getattr(pg, "accepts_strided", False):
        return list(tensors), []
    out_ids = {id(t) for t in outputs}
    staged, copies = [], []
    for t in tensors:
        if t is None or t.is_contiguous():
            staged.append(t)
        else:
            c = t.detach().contiguous()
            staged.append(c)
            if id(t) in out_ids:
                copies.append((t, c))
    return staged, copies


def _run(pg: ProcessGroup, method: str, tensors: list, outputs, async_op: bool, *rest):
    """Call ``pg.<method>(*tensors, *rest)`` (entries: a tensor, a list of tensors or None) and
    return a Work (async) or None, honouring the group timeout."""
    flat = []
    for t in tensors:
        if isinstance(t, list):
            flat.extend(t)
        elif t is not None:
            flat.append(t)
    staged, copies = _stage(pg, flat, outputs)
    it = iter(staged)
    args = [[next(it) for _ in t] if isinstance(t, list) else (None if t is None else next(it)) for t in tensors]
    timeout = state.timeout
    work = getattr(pg, method)(*args, *rest, async_op=bool(async_op or timeout is not None))
    if copies:
        work = _StagedWork(work, copies, outputs)
    if async_op:
        return work
    work.wait(None if timeout is None else _seconds(timeout))
    return None


def _seconds(timeout) -> float:
    return timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)


# -- collectives -----------------------------------------------------------------------------------
def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` across the group, in place on every rank (``op``: a :class:`ReduceOp`).

    >>> t = ember.ones(3) * (dist.get_rank() + 1)
    >>> dist.all_reduce(t)          # every rank now holds 1 + 2 + ... + world_size
    """
    pg = resolve(group)
    if pg is None:
        return None
    _tensor(tensor, "all_reduce")
    op = _op(op, "all_reduce")
    call = C.Call("all_reduce", op=op, a=_meta.signature(tensor),
                  local_error=_first(_device_error(pg, [tensor], "all_reduce"),
                                     _reduce_error(op, tensor, "all_reduce")))
    rows = _agree(pg, call)
    if rows is not None:
        C.same(pg, call, rows, "a", "tensors")
    return _run(pg, "allreduce", [tensor], [tensor], async_op, op)


def broadcast(tensor: Tensor, src: int | None = None, group=None, async_op: bool = False,
              group_src: int | None = None):
    """Copy ``tensor`` of rank ``src`` into ``tensor`` of every rank of the group."""
    pg = resolve(group)
    if pg is None:
        return None
    _tensor(tensor, "broadcast")
    root = _group_rank(pg, src, group_src, "broadcast", "src")
    call = C.Call("broadcast", root=root, a=_meta.signature(tensor),
                  local_error=_device_error(pg, [tensor], "broadcast"))
    rows = _agree(pg, call)
    if rows is not None:
        C.same(pg, call, rows, "a", "tensors")
    return _run(pg, "broadcast", [tensor], [tensor], async_op, root)


def reduce(tensor: Tensor, dst: int | None = None, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False,
           group_dst: int | None = None):
    """Reduce ``tensor`` across the group into ``tensor`` of rank ``dst`` (others keep theirs)."""
    pg = resolve(group)
    if pg is None:
        return None
    _tensor(tensor, "reduce")
    op = _op(op, "reduce")
    root = _group_rank(pg, dst, group_dst, "reduce", "dst")
    call = C.Call("reduce", op=op, root=root, a=_meta.signature(tensor),
                  local_error=_first(_device_error(pg, [tensor], "reduce"), _reduce_error(op, tensor, "reduce")))
    rows = _agree(pg, call)
    if rows is not None:
        C.same(pg, call, rows, "a", "tensors")
    return _run(pg, "reduce", [tensor], [tensor], async_op, root, op)


def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    """``tensor_list[r]`` receives rank ``r``'s ``tensor`` on every rank (ranks may contribute
    tensors of different shapes when ``tensor_list`` says so)."""
    pg = resolve(group)
    if pg is None:
        return None
    _tensor(tensor, "all_gather")
    outs = _tensor_list(tensor_list, "all_gather", "tensor_list")
    err = _device_error(pg, outs + [tensor], "all_gather")
    if err is None and len(outs) != pg.size():
        err = ValueError(f"all_gather: tensor_list has {len(outs)} tensors but the group has {pg.size()} ranks")
    call = C.Call("all_gather", a=_meta.signature(tensor), c=C.sigs_hash([_meta.signature(t) for t in outs]),
                  local_error=err)
    rows = _agree(pg, call)
    if rows is not None:
        C.same_dtype(pg, call, rows, "a", "tensors")
        C.per_rank(pg, call, rows, "a", range(pg.size()), "tensor_list entries")
    return _run(pg, "allgather", [outs, tensor], outs, async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group=None, async_op: bool = False):
    """Every rank's ``input_tensor`` concatenated in rank order into ``output_tensor``
    (``world_size * input.numel()`` elements: shaped ``[world_size * n, ...]`` or
    ``[world_size, n, ...]``)."""
    pg = resolve(group)
    if pg is None:
        return None
    op = "all_gather_into_tensor"
    _tensor(output_tensor, op, "output_tensor")
    _tensor(input_tensor, op, "input_tensor")
    err = _device_error(pg, [output_tensor, input_tensor], op)
    if err is None and output_tensor.numel() != pg.size() * input_tensor.numel():
        err = ValueError(f"{op}: output tensor size must be equal to world_size times input tensor size: output "
                         f"{_meta.describe(_meta.signature(output_tensor))}, input "
                         f"{_meta.describe(_meta.signature(input_tensor))}, world_size {pg.size()}")
    call = C.Call(op, a=_meta.signature(input_tensor), b=_meta.signature(output_tensor), local_error=err)
    rows = _agree(pg, call)
    if rows is not None:
        C.same(pg, call, rows, "a", "input tensors")
        C.same(pg, call, rows, "b", "output tensors")
    return _run(pg, "allgather_into_tensor", [output_tensor, input_tensor], [output_tensor], async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM, group=None,
                          async_op: bool = False):
    """Reduce ``input`` (``world_size * output.numel()`` elements) across the group; rank ``r``'s
    ``output`` receives block ``r`` of the result."""
    pg = resolve(group)
    if pg is None:
        return None
    name = "reduce_scatter_tensor"
    _tensor(output, name, "output")
    _tensor(input, name, "input")
    op = _op(op, name)
    err = _first(_device_error(pg, [output, input], name), _reduce_error(op, input, name))
    if err is None and input.numel() != pg.size() * output.numel():
        err = ValueError(f"{name}: input tensor must be world_size times the output tensor's size: input "
                         f"{_meta.describe(_meta.signature(input))}, output {_meta.describe(_meta.signature(output))}, "
                         f"world_size {pg.size()}")
    call = C.Call(name, op=op, a=_meta.signature(output), b=_meta.signature(input), local_error=err)
    rows = _agree(pg, call)
    if rows is not None:
        C.same(pg, call, rows, "a", "output tensors")
        C.same(pg, call, rows, "b", "input tensors")
    return _run(pg, "reduce_scatter_tensor", [output, input], [output], async_op, op)


def reduce_scatter(output: Tensor, input_list: list, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``input_list`` elementwise across the group; rank ``r``'s ``output`` receives the
    reduction of every rank's ``input_list[r]``."""
    pg = resolve(group)
    if pg is None:
        return None
    name = "reduce_scatter"
    _tensor(output, name, "output")
    inputs = _tensor_list(input_list, name, "input_list")
    op = _op(op, name)
    err = _first(_device_error(pg, [output] + inputs, name), _reduce_error(op, output, name))
    if err is None and len(inputs) != pg.size():
        err = ValueError(f"{name}: input_list has {len(inputs)} tensors but the group has {pg.size()} ranks")
    if err is None:
        bad = [i for i, t in enumerate(inputs) if t._shape != output._shape]
        if bad:
            err = ValueError(f"{name}: input_list[{bad[0]}] is {_meta.describe(_meta.signature(inputs[bad[0]]))} but "
                             f"output is {_meta.describe(_meta.signature(output))}; every input must have the output's "
                             "shape")
    call = C.Call(name, op=op, length=len(inputs), a=_meta.signature(output), local_error=err)
    rows = _agree(pg, call)
    if rows is not None:
        C.same(pg, call, rows, "a", "output tensors")
    flat = ops.cat([t.detach().reshape(-1) for t in inputs]) if inputs else None
    return _run(pg, "reduce_scatter_tensor", [output, flat], [output], async_op, op)


def gather(tensor: Tensor, gather_list: list | None = None, dst: int | None = None, group=None,
           async_op: bool = False, group_dst: int | None = None):
    """Rank ``dst`` (default 0) receives every rank's ``tensor`` in ``gather_list``; other ranks
    pass no list."""
    pg = resolve(group)
    if pg is None:
        return None
    name = "gather"
    _tensor(tensor, name)
    root = _group_rank(pg, dst, group_dst, name, "dst", default=pg.ranks[0] if group_dst is None else None)
    is_root = pg.rank() == root
    outs = _tensor_list(gather_list, name, "gather_list") if gather_list is not None else None
    err = None
    if is_root and outs is None:
        err = ValueError("gather: the destination rank must pass gather_list (one tensor per rank)")
    elif not is_root and outs:
        err = ValueError("gather: Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    elif is_root and len(outs) != pg.size():
        err = ValueError(f"gather: gather_list has {len(outs)} tensors but the group has {pg.size()} ranks")
    err = _first(_device_error(pg, (outs if is_root and outs else []) + [tensor], name), err)
    call = C.Call(name, root=root, a=_meta.signature(tensor),
                  c=C.sigs_hash([_meta.signature(t) for t in outs]) if is_root and outs else 0, local_error=err)
    rows = _agree(pg, call)
    if rows is not None:
        C.same_dtype(pg, call, rows, "a", "tensors")
        C.per_rank(pg, call, rows, "a", [root], "gather_list entries")
    if not is_root:
        return _run(pg, "gather", [None, tensor], [], async_op, root)
    return _run(pg, "gather", [outs, tensor], outs, async_op, root)


def scatter(tensor: Tensor, scatter_list: list | None = None, src: int | None = None, group=None,
            async_op: bool = False, group_src: int | None = None):
    """Rank ``r``'s ``tensor`` receives ``scatter_list[r]`` of rank ``src`` (default 0)."""
    pg = resolve(group)
    if pg is None:
        return None
    name = "scatter"
    _tensor(tensor, name)
    root = _group_rank(pg, src, group_src, name, "src", default=pg.ranks[0] if group_src is None else None)
    is_root = pg.rank() == root
    ins = _tensor_list(scatter_list, name, "scatter_list") if scatter_list is not None else None
    err = None
    if is_root and ins is None:
        err = ValueError("scatter: the source rank must pass scatter_list (one tensor per rank)")
    elif not is_root and ins:
        err = ValueError("scatter: Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    elif is_root and len(ins) != pg.size():
        err = ValueError(f"scatter: scatter_list has {len(ins)} tensors but the group has {pg.size()} ranks")
    err = _first(_device_error(pg, (ins if is_root and ins else []) + [tensor], name), err)
    call = C.Call(name, root=root, a=_meta.signature(tensor),
                  c=C.sigs_hash([_meta.signature(t) for t in ins]) if is_root and ins else 0, local_error=err)
    rows = _agree(pg, call)
    if rows is not None:
        C.same_dtype(pg, call, rows, "a", "tensors")
        C.per_rank(pg, call, rows, "a", [root], "scatter_list entries")
    return _run(pg, "scatter", [tensor, ins if is_root else None], [tensor], async_op, root)


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank of the group has reached this call."""
    pg = resolve(group)
    if pg is None:
        return None
    _agree(pg, C.Call("barrier"))
    return _run(pg, "barrier", [], [], async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks: bool = False):
    """A barrier that raises ``RuntimeError`` after ``timeout`` (a timedelta or seconds)."""
    pg = resolve(group)
    if pg is None:
        return None
    _agree(pg, C.Call("barrier"))
    work = pg.barrier(async_op=True)
    limit = timeout if timeout is not None else state.timeout
    work.wait(None if limit is None else _seconds(limit))
    return None


# -- point to point -------------------------------------------------------------------------------
def _p2p_args(tensor, peer, group_peer, group, tag, op: str, what: str):
    pg = resolve(group)
    if pg is None:
        return None, None
    _tensor(tensor, op)
    if not isinstance(tag, int) or isinstance(tag, bool) or tag < 0:
        raise ValueError(f"{op}: tag must be a non-negative int, got {tag!r}")
    err = _device_error(pg, [tensor], op)
    if err is not None:
        raise err
    if what == "src" and peer is None and group_peer is None:
        return pg, None  # any source
    r = _group_rank(pg, peer, group_peer, op, what)
    if r == pg.rank():
        raise ValueError(f"{op}: Invalid {'destination' if what == 'dst' else 'source'} rank: should not be the same "
                         "as the rank of the current process.")
    return pg, r


def send(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None) -> None:
    """Send ``tensor`` to rank ``dst`` (blocks until the buffer may be reused)."""
    pg, r = _p2p_args(tensor, dst, group_dst, group, tag, "send", "dst")
    if pg is not None:
        _run(pg, "send", [tensor], [], False, r, tag)


def isend(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None):
    """Start sending ``tensor`` to rank ``dst``; returns a Work (do not modify ``tensor`` until
    ``wait()``)."""
    pg, r = _p2p_args(tensor, dst, group_dst, group, tag, "isend", "dst")
    return None if pg is None else _run(pg, "send", [tensor], [], True, r, tag)


def recv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None) -> int:
    """Receive into ``tensor`` from rank ``src`` (None: any rank); returns the sender's global
    rank. A sender's tensor of another shape or dtype raises (``tensor`` is left unchanged)."""
    pg, r = _p2p_args(tensor, src, group_src, group, tag, "recv", "src")
    if pg is None:
        return -1
    staged, copies = _stage(pg, [tensor], [tensor])
    work = pg.recv(staged[0], r, tag, async_op=False)
    if copies:
        _StagedWork(work, copies, [tensor]).wait()
    return pg.ranks[work.source] if getattr(work, "source", None) is not None else pg.ranks[r]


def irecv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None):
    """Start receiving into ``tensor`` from rank ``src`` (None: any rank); returns a Work."""
    pg, r = _p2p_args(tensor, src, group_src, group, tag, "irecv", "src")
    return None if pg is None else _run(pg, "recv", [tensor], [tensor], True, r, tag)


class P2POp:
    """One send or receive for :func:`batch_isend_irecv`: ``P2POp(dist.isend, tensor, peer)``."""

    def __init__(self, op, tensor: Tensor, peer: int | None = None, group=None, tag: int = 0,
                 group_peer: int | None = None) -> None:
        if op not in (isend, irecv, send, recv):
            raise ValueError("P2POp: op must be ember.distributed.isend or ember.distributed.irecv")
        self.op = isend if op in (isend, send) else irecv
        self.tensor, self.peer, self.group, self.tag, self.group_peer = tensor, peer, group, tag, group_peer


def batch_isend_irecv(p2p_op_list: Sequence[P2POp]) -> list:
    """Start every send and receive of the list; returns their Works."""
    if not isinstance(p2p_op_list, (list, tuple)) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise TypeError("batch_isend_irecv: expected a list of ember.distributed.P2POp")
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]


# -- picklable objects (small metadata; pickle runs arbitrary code: trusted peers only) ----------------
def _object_call(pg, kind: str, root: int = 0, length: int = 0, err=None) -> None:
    _agree(pg, C.Call(kind, root=root, length=length, local_error=err))


def all_gather_object(object_list: list, obj, group=None) -> None:
    """``object_list[r]`` becomes rank ``r``'s picklable ``obj`` on every rank."""
    pg = resolve(group)
    if pg is None:
        return None
    err = None
    if not isinstance(object_list, list) or len(object_list) != pg.size():
        err = ValueError(f"all_gather_object: object_list must be a list of {pg.size()} entries (the group size), "
                         f"got {type(object_list).__name__} of length "
                         f"{len(object_list) if hasattr(object_list, '__len__') else '?'}")
    _object_call(pg, "all_gather_object", err=err)
    object_list[:] = pg.allgather_object(obj)
    return None


def broadcast_object_list(object_list: list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Rank ``src``'s ``object_list`` (picklable objects) replaces ``object_list`` on every rank,
    element by element."""
    pg = resolve(group)
    if pg is None:
        return None
    root = _group_rank(pg, src, group_src, "broadcast_object_list", "src", default=pg.ranks[0] if group_src is None
                       else None)
    err = None if isinstance(object_list, list) else TypeError(
        f"broadcast_object_list: object_list must be a list, got {type(object_list).__name__}")
    _object_call(pg, "broadcast_object_list", root=root, length=len(object_list) if err is None else 0, err=err)
    values = pg.broadcast_object(list(object_list) if pg.rank() == root else None, root)
    object_list[:] = values
    return None


def gather_object(obj, object_gather_list: list | None = None, dst: int | None = None, group=None,
                  group_dst: int | None = None) -> None:
    """Rank ``dst`` (default 0) receives every rank's ``obj`` in ``object_gather_list``."""
    pg = resolve(group)
    if pg is None:
        return None
    root = _group_rank(pg, dst, group_dst, "gather_object", "dst", default=pg.ranks[0] if group_dst is None else None)
    err = None
    if pg.rank() == root and (not isinstance(object_gather_list, list) or len(object_gather_list) != pg.size()):
        err = ValueError(f"gather_object: the destination rank must pass object_gather_list, a list of {pg.size()} "
                         "entries")
    _object_call(pg, "gather_object", root=root, err=err)
    objs = pg.gather_object(obj, root)
    if pg.rank() == root:
        object_gather_list[:] = objs
    return None


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list: list | None = None,
                        src: int | None = None, group=None, group_src: int | None = None) -> None:
    """``scatter_object_output_list[0]`` becomes element ``rank`` of rank ``src``'s input list."""
    pg = resolve(group)
    if pg is None:
        return None
    root = _group_rank(pg, src, group_src, "scatter_object_list", "src", default=pg.ranks[0] if group_src is None
                       else None)
    err = None
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        err = ValueError("scatter_object_list: scatter_object_output_list must be a non-empty list")
    elif pg.rank() == root and (not isinstance(scatter_object_input_list, (list, tuple))
                                or len(scatter_object_input_list) != pg.size()):
        err = ValueError(f"scatter_object_list: the source rank must pass scatter_object_input_list with {pg.size()} "
                         "entries")
    _object_call(pg, "scatter_object_list", root=root, err=err)
    scatter_object_output_list[0] = pg.scatter_object(
        list(scatter_object_input_list) if pg.rank() == root else None, root)
    return None
