"""``DistributedDataParallel``: data-parallel training over the processes of a group.

Each process holds a replica of the module and trains on its own share of the data. On wrap,
rank 0's parameters and buffers are broadcast to every rank. In ``backward()``, each parameter's
gradient is copied into a flat bucket (``bucket_cap_mb``) as soon as it has been accumulated
(``register_post_accumulate_grad_hook``); a full bucket is all-reduced (averaged)
asynchronously, buckets in the same order on every rank; an end-of-backward callback
(``autograd.engine.queue_callback``) waits for them and writes the averaged gradients back, so
``backward()`` returns with the same ``.grad`` on every rank and any optimizer works.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ... import _tensor
from ... import distributed as dist
from ..._dtype import int32
from ..._graph import AccumulateGrad
from ...autograd import engine, is_grad_enabled, no_grad
from ...distributed import ReduceOp
from ...ops.creation import zeros
from ...ops.shape import cat
from ..modules.module import Module

_MiB = 1024 * 1024
_FIRST_BUCKET_BYTES = 1 * _MiB  # a small first bucket starts the first all-reduce early (as PyTorch)


class _Bucket:
    """A flat gradient buffer for some parameters of one device and dtype."""

    __slots__ = ("index", "flat", "params", "slots", "pending", "work")

    def __init__(self, index: int, params: list, device, dtype) -> None:
        self.index = index
        self.params = params                     # indices into DDP's parameter list
        n = sum(p.numel() for _, p in params)
        self.flat = zeros(n, dtype=dtype, device=device)
        self.slots = []                          # per parameter: a view of ``flat`` with its shape
        off = 0
        for _, p in params:
            self.slots.append(self.flat[off:off + p.numel()].view(p.shape))
            off += p.numel()
        self.pending = len(params)
        self.work = None


def _tensors_in(obj, out: list) -> list:
    if isinstance(obj, _tensor.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    return out


class DistributedDataParallel(Module):
    """Synchronous data parallelism over ``process_group`` (default: the world).

    ``module``'s gradients are averaged over the group during ``backward()``. Every rank must
    build the same module (checked on wrap) and run the same number of backward passes.
    ``device_ids``/``output_device`` name the single device of a module on an accelerator
    (None for cpu and for modules spread over several devices); ``broadcast_buffers`` copies rank
    0's buffers to every rank at each forward; ``find_unused_parameters`` lets some parameters
    receive no gradient (found by walking the output's graph); ``no_sync()`` accumulates
    gradients locally; ``gradient_as_bucket_view`` makes ``.grad`` views of the buckets (saves
    a copy). ``static_graph`` is accepted and has no effect (ember re-examines every iteration).

    >>> model = DistributedDataParallel(Net())
    >>> loss_fn(model(x), y).backward()      # .grad is the average over the ranks
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, init_sync: bool = True, process_group=None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 **unsupported: Any) -> None:
        super().__init__()
        if unsupported:
            raise TypeError(f"DistributedDataParallel: unsupported arguments {sorted(unsupported)}")
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be an ember.nn.Module, got {type(module).__name__}")
        pg = dist._world.resolve(process_group)
        if pg is None:
            raise ValueError("DistributedDataParallel: this process is not a member of process_group")
        self.module = module
        object.__setattr__(self, "process_group", pg)
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        cap = 25.0 if bucket_cap_mb is None else float(bucket_cap_mb)
        if cap <= 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.bucket_bytes_cap = int(cap * _MiB)

        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        devices = list(dict.fromkeys(p.device for _, p in named))
        types = {d.type for d in devices}
        if len(types) > 1:
            raise ValueError(f"DistributedDataParallel: the module's parameters are on devices of several types "
                             f"({', '.join(map(str, devices))}); put them on one device type")
        dev_type = devices[0].type
        if not pg.serves(dev_type):
            raise RuntimeError(f"DistributedDataParallel: the process group (backend '{dist.get_backend(pg)}') moves "
                               f"{', '.join(pg.device_types)} tensors, but the module is on {devices[0]}")
        self._check_device_ids(device_ids, output_device, devices)
        self.device_ids = device_ids
        self.output_device = output_device
        self.device_type = dev_type
        self._named = named
        self._params = [p for _, p in named]
        self._verify_same_model()
        if init_sync:
            self._broadcast_coalesced([p for p in self._params] + [b for b in module.buffers()])
        self._build_buckets()
        self._index = {id(p): i for i, p in enumerate(self._params)}
        self._hooks = [p.register_post_accumulate_grad_hook(self._on_grad) for p in self._params]
        self._pass = None     # state of the backward pass in progress
        self._unused = None   # parameter indices the last forward's graph does not reach

    # -- construction ---------------------------------------------------------------------------
    @staticmethod
    def _check_device_ids(device_ids, output_device, devices) -> None:
        if device_ids is None:
            return
        if not isinstance(device_ids, (list, tuple)) or len(device_ids) != 1:
            raise ValueError("DistributedDataParallel device_ids can only be None or contain a single element "
                             f"(one device per process), got {device_ids!r}")
        if devices[0].type == "cpu":
            raise ValueError("DistributedDataParallel device_ids and output_device arguments only work with "
                             "single-device modules on an accelerator; use device_ids=None for cpu modules")
        if len(devices) > 1:
            raise ValueError("DistributedDataParallel: device_ids must be None for a module on several devices")
        want = device_ids[0]
        idx = want.index if hasattr(want, "index") else want
        if idx is not None and devices[0].index != int(idx):
            raise ValueError(f"DistributedDataParallel: device_ids={device_ids} but the module is on {devices[0]}")

    def _verify_same_model(self) -> None:
        pg = self.process_group
        mine = [(n, tuple(p.shape), p.dtype.name) for n, p in self._named]
        every = pg.allgather_object(mine)
        for r, theirs in enumerate(every):
            if theirs != mine:
                if len(theirs) != len(mine):
                    detail = f"rank {pg.ranks[r]} has {len(theirs)} parameters, this rank has {len(mine)}"
                else:
                    i = next(i for i, (a, b) in enumerate(zip(theirs, mine)) if a != b)
                    detail = (f"parameter {i} is {theirs[i][0]} {list(theirs[i][1])} {theirs[i][2]} on rank "
                              f"{pg.ranks[r]} but {mine[i][0]} {list(mine[i][1])} {mine[i][2]} on this rank")
                raise RuntimeError(f"DistributedDataParallel expects the same model on every rank: {detail}")

    def _broadcast_coalesced(self, tensors: list, root: int = 0) -> None:
        """Broadcast ``tensors`` from group rank ``root``: one flat message per device and dtype."""
        pg = self.process_group
        if pg.size() == 1 or not tensors:
            return
        groups: dict = {}
        for t in tensors:
            if t.numel():
                groups.setdefault((t.device, t.dtype), []).append(t)
        with no_grad():
            for ts in groups.values():
                flat = cat([t.detach().reshape(-1) for t in ts])
                pg.broadcast(flat, root).wait()
                off = 0
                for t in ts:
                    n = t.numel()
                    t.detach().copy_(flat[off:off + n].view(t.shape))
                    off += n

    def _build_buckets(self) -> None:
        """Parameters in reverse order (roughly the order backward produces their gradients),
        grouped per device and dtype into buckets of at most ``bucket_bytes_cap`` bytes."""
        buckets: list = []
        open_: dict = {}
        for i in reversed(range(len(self._params))):
            p = self._params[i]
            key = (p.device, p.dtype)
            cur = open_.get(key)
            cap = self.bucket_bytes_cap
            if not buckets and cur is None:
                cap = min(cap, _FIRST_BUCKET_BYTES)
            size = p.numel() * p.element_size()
            if cur is None or (cur[1] and cur[1] + size > cur[2]):
                cur = open_[key] = [[], 0, cap]
                buckets.append(cur)
            cur[0].append((i, p))
            cur[1] += size
        self._buckets = [_Bucket(k, b[0], b[0][0][1].device, b[0][0][1].dtype) for k, b in enumerate(buckets)]
        self._where = {}  # parameter index -> (bucket, slot)
        for b in self._buckets:
            for s, (i, _) in enumerate(b.params):
                self._where[i] = (b, s)

    # -- forward ------------------------------------------------------------------------------
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        sync = is_grad_enabled() and self.require_backward_grad_sync
        self.require_forward_param_sync = sync
        if sync and self.broadcast_buffers:
            bufs = list(self.module.buffers())
            if bufs:
                self._broadcast_coalesced(bufs)
        out = self.module(*inputs, **kwargs)
        if sync and self.find_unused_parameters:
            self._unused = self._unreached(out)
        return out

    def _unreached(self, out) -> set:
        """Indices of the parameters whose AccumulateGrad node the output's graph does not reach."""
        seen, stack, used = set(), [], set()
        for t in _tensors_in(out, []):
            if t.grad_fn is not None:
                stack.append(t.grad_fn)
            elif t.requires_grad and id(t) in self._index:
                used.add(self._index[id(t)])
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if isinstance(node, AccumulateGrad):
                i = self._index.get(id(node.variable))
                if i is not None:
                    used.add(i)
                continue
            stack.extend(n for n, _ in node.next_functions if n is not None and n not in seen)
        return set(range(len(self._params))) - used

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside this block backward accumulates gradients locally, without communication; the
        first backward after it averages the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # -- backward -----------------------------------------------------------------------------
    def _on_grad(self, p) -> None:
        if not self.require_backward_grad_sync:
            return
        st = self._pass
        if st is None:
            st = self._start_pass()
        i = self._index[id(p)]
        if i in st["ready"]:
            return
        self._mark_ready(st, i, p._grad)

    def _start_pass(self) -> dict:
        st = self._pass = {"ready": set(), "used": set(), "next": 0}
        engine.queue_callback(self._finish_pass)
        if self.find_unused_parameters and self._unused:
            for i in sorted(self._unused):  # they will get no gradient: their slots count as zeros
                self._mark_ready(st, i, None)
        return st

    def _mark_ready(self, st: dict, i: int, grad) -> None:
        b, s = self._where[i]
        slot = b.slots[s]
        with no_grad():
            if grad is None:
                slot.zero_()
            else:
                st["used"].add(i)
                if grad is not slot:
                    slot.copy_(grad)
        st["ready"].add(i)
        b.pending -= 1
        if b.pending == 0:
            self._launch_ready(st)

    def _launch_ready(self, st: dict) -> None:
        """Start the all-reduce of every complete bucket, in bucket order (the order must be the
        same on every rank: MPI matches collectives by their order)."""
        pg = self.process_group
        while st["next"] < len(self._buckets) and self._buckets[st["next"]].pending == 0:
            b = self._buckets[st["next"]]
            op = ReduceOp.AVG if b.flat.is_floating_point() else ReduceOp.SUM
            b.work = pg.allreduce(b.flat, op, async_op=True) if pg.size() > 1 else None
            st["next"] += 1

    def _finish_pass(self) -> None:
        st, self._pass = self._pass, None
        missing = [i for i in range(len(self._params)) if i not in st["ready"]]
        try:
            if missing and self.find_unused_parameters:
                for i in missing:
                    self._mark_ready(st, i, None)
                missing = []
            for b in self._buckets[:st["next"]]:
                if b.work is not None:
                    b.work.wait()
                    b.work = None
        finally:
            for b in self._buckets:
                b.pending = len(b.params)
        if missing:
            names = ", ".join(self._named[i][0] for i in missing)
            raise RuntimeError(
                "DistributedDataParallel: some parameters received no gradient in this backward pass, so their "
                f"gradients cannot be averaged over the ranks: {names} (parameter indices {missing}). This means "
                "they were not used to compute the loss; pass find_unused_parameters=True to "
                "DistributedDataParallel, or make sure every parameter takes part in the forward pass.")
        used = st["used"]
        if self.find_unused_parameters:
            used = self._globally_used(used)
        self._unused = None
        with no_grad():
            for i, p in enumerate(self._params):
                if i not in used:
                    continue  # unused on every rank: .grad stays as it was, as in PyTorch
                b, s = self._where[i]
                slot = b.slots[s]
                if self.gradient_as_bucket_view:
                    if p._grad is not slot:
                        p._grad = slot
                elif p._grad is None:
                    p._grad = slot.clone()
                else:
                    p._grad.copy_(slot)

    def _globally_used(self, used: set) -> set:
        """The parameters some rank used (a MAX all-reduce of each rank's used flags)."""
        pg = self.process_group
        if pg.size() == 1:
            return used
        flags = zeros(len(self._params), dtype=int32, device=self._params[0].device)
        for i in used:
            flags[i] = 1
        pg.allreduce(flags, ReduceOp.MAX).wait()
        return {i for i, v in enumerate(flags.tolist()) if v}

    # -- misc -----------------------------------------------------------------------------------
    def _remove_hooks(self) -> None:
        for h in self._hooks:
            h.remove()
        self._hooks = []

    def extra_repr(self) -> str:
        return (f"world_size={self.process_group.size()}, buckets={len(self._buckets)}, "
                f"find_unused_parameters={self.find_unused_parameters}")
