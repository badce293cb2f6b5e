"""Capture: run a function once eagerly while recording every kernel call dispatch makes.

While a :class:`Recorder` is installed, each device's kernel table (``device._kernels``, the one
attribute :func:`ember.ops.registry.dispatch` reads) is a :class:`RecordingKernels`, whose entries
run the real kernel and append one step to the recording; the backend's ``empty`` /
``from_numpy`` (tensors the core allocates outside a kernel) and ``to_numpy`` (a host read:
``.item()``, ``bool()``, ``.tolist()``, ``.numpy()``, printing) are wrapped on the backend object
for the same time. This is the pattern of the ONNX tracer (``ember.onnx._trace``): the eager hot
path pays nothing for it. Calls made inside a kernel (depth > 0) are not recorded: replaying the
outer kernel makes them again.

Every tensor the recording meets becomes a **slot**: an input of the compiled function, an
external tensor read live at replay (a parameter, a buffer, any tensor that existed before the
call), the output of a recorded kernel, a tensor the core allocated (``empty``) or built from
host data (``from_numpy``), or an alias (a view, ``detach()``...) of a slot's storage, found by
its storage object, with its geometry. Python values in kernel arguments are recorded as they
were (the guards make them the same on every call that replays).

What the recording cannot replay faithfully is a **break** (:class:`Break`), with its reason and
the user's line: a host read, a kernel whose output shape depends on the data, a kernel that
returns a host value, a python hook in a backward pass inside the call.

A backward pass inside the call (``loss.backward()``, ``autograd.grad``; the engine tells the
recorder through :meth:`Recorder.backward_pass`) makes the recording a **training step**: its
kernel calls are recorded like the forward's, and so are the engine's writes of ``.grad``: while
a recorder runs, the ``_grad`` slot of :class:`~ember.Tensor` is replaced by a property that records
each write as a ``set_grad`` step and each first read of a tensor's gradient (a guard: the
gradient an argument or a parameter had when the call began, which the replay checks it still
has). Code that keeps other state (an optimizer) adds its own guards (:meth:`Recorder.add_guard`)
or asks for the capture to be made again on the next call (:meth:`Recorder.retry`).
"""
from __future__ import annotations

import sys
import traceback

from .. import _graph, _hoststep, _state
from .._tensor import Tensor

__all__: list = []

#: kernels whose output shape depends on the values of their inputs: the ops after them would
#: replay with the shapes of the capture
DATA_DEPENDENT = frozenset({"nonzero", "unique", "unique_consecutive", "masked_select", "bincount",
                            "repeat_interleave", "argwhere", "nonzero_static_dynamic"})

#: kernels that write their first argument (the core bumps its version counter)
IN_PLACE = frozenset({"copy_", "fill_", "uniform_", "normal_"})

_active: list = []  # the running recorder, if any

#: the ``_grad`` slot of Tensor (a member descriptor), put back after a capture
_GRAD_SLOT = Tensor.__dict__["_grad"]
_WRITTEN = object()  # in ``grad_first``: the call wrote the gradient before reading it


def capturing() -> bool:
    """Whether a capture is recording in this process (``ember.compiler.is_compiling``)."""
    return bool(_active)


class Break(Exception):
    """Something the capture cannot replay; ``reason`` says what, ``where`` the user's line."""

    def __init__(self, reason: str, where: str = ""):
        super().__init__(reason + (f" (at {where})" if where else ""))
        self.reason = reason
        self.where = where


def user_frame() -> str:
    """``file:line`` of the innermost frame outside ember (where the user's code stands)."""
    here = __file__.rsplit("/", 2)[0]
    for fs in reversed(traceback.extract_stack(sys._getframe(1))):
        if not fs.filename.startswith(here):
            return f"{fs.filename}:{fs.lineno}"
    return ""


class RecordingKernels(dict):
    """A device's kernel table while a recorder runs: each entry runs the real kernel and records
    the call. An op the backend has no kernel for gets None, so dispatch runs its decomposition,
    whose parts are recorded."""

    def __init__(self, real, rec):
        super().__init__()
        self.real = real
        self.rec = rec
        self.backend = getattr(real, "backend", None)

    def get(self, name, default=None):
        return self.rec.kernel(name, self.real)

    def __getitem__(self, name):
        k = self.rec.kernel(name, self.real)
        return k if k is not None else self.real[name]

    def __contains__(self, name):
        return name in self.real


class Slot:
    """One tensor of the recording. ``kind``: "input" (``index`` into the flat inputs), "ext"
    (read live), "kernel" (``step`` made it), "alloc", "const" (from host data: ``host``),
    "alias" (``base`` slot and geometry), "grad" (the ``.grad`` of slot ``base`` when the call
    began, read live)."""

    __slots__ = ("n", "kind", "tensor", "index", "base", "geom", "step", "host", "backend")

    def __init__(self, n, kind, tensor):
        self.n = n
        self.kind = kind
        self.tensor = tensor
        self.index = self.base = self.geom = self.step = self.host = self.backend = None


class Step:
    """One kernel call: ``kernel`` (the real function), ``name``, encoded ``args`` and ``kwargs``
    (a slot number is ``Ref``; sequences are kept as their type), the new ``outs`` (slot numbers,
    or None where an output was not a new tensor) and whether the kernel returned a tuple."""

    __slots__ = ("n", "kernel", "name", "args", "kwargs", "outs", "multi", "backend")

    def __init__(self, n, kernel, name, args, kwargs, backend):
        self.n = n
        self.kernel = kernel
        self.name = name
        self.args = args
        self.kwargs = kwargs
        self.backend = backend
        self.outs = ()
        self.multi = False


class Ref:
    """A slot reference inside encoded arguments."""

    __slots__ = ("n",)

    def __init__(self, n):
        self.n = n

    def __repr__(self):
        return f"t{self.n}"


def store_grad(t, g) -> None:
    """The replay of a recorded ``.grad`` write."""
    t._grad = g


class Recorder:
    """Records the kernel calls made on ``devices`` inside the ``with`` block (see the module
    docstring). ``fullgraph``: raise :class:`Break` at the first break instead of noting it.
    ``backward_ok``: the recording is of a backward program (:mod:`._train`), whose backward pass
    does not make it a training step."""

    def __init__(self, devices, fullgraph: bool = False, backward_ok: bool = False):
        self.devices = list(devices)
        self.backward_ok = backward_ok
        #: a backward pass ran inside the call: the recording is a whole training step
        self.step_mode = False
        #: the graph nodes the backward passes inside the call released (ran without retain_graph)
        self.consumed: set = set()
        #: id(tensor) -> (tensor, its gradient when first read, or ``_WRITTEN``): the first access
        #: to each tensor's ``.grad`` inside the call
        self.grad_first: dict = {}
        self.guards: list = []      # functions () -> bool that must hold for a replay
        #: id(module) -> (module, its attributes when first called): the nn.Modules called inside
        #: the call (their state is guarded; an attribute assigned inside the call is a break)
        self.modules_called: dict = {}
        self.retry_reason = None    # set: run this call eagerly, capture again on the next one
        self.fullgraph = fullgraph
        self.slots: list = []
        self.slot_of: dict = {}     # id(tensor) -> Slot
        self.storage_of: dict = {}  # id(storage) -> Slot owning it
        self.steps: list = []
        self.versions: dict = {}    # id(version list) -> [list, value first seen, bumps inside kernels, Slot]
        self.breaks: list = []
        self.depth = 0
        self.grad_seen = False      # a slot requiring grad met with grad mode on (at the call)
        self.grad_mode = _state.grad.enabled
        self._cache: dict = {}
        self._saved: list = []
        self._keep: list = []       # objects whose ids are keys, kept alive

    # -- install -------------------------------------------------------------------------------
    def __enter__(self):
        if _active:
            raise RuntimeError("ember.compile: a capture is already recording in this process")
        backends = []
        for d in self.devices:
            self._saved.append((d, d._kernels))
            d._kernels = RecordingKernels(d._kernels, self)
            if d._backend not in backends:
                backends.append(d._backend)
        self._backends = []
        for be in backends:
            self._backends.append((be, be.__dict__.get("empty"), be.__dict__.get("from_numpy"),
                                   be.__dict__.get("to_numpy")))
            self._wrap_backend(be)
        _active.append(self)
        _hoststep.recorder[0] = self
        self._swap_grad_slot()
        self.seq0 = next(_graph._seq)  # graph nodes made inside the call number above it
        return self

    def __exit__(self, *exc):
        Tensor._grad = _GRAD_SLOT
        for d, k in self._saved:
            d._kernels = k
        for be, e, f, t in self._backends:
            for name, old in (("empty", e), ("from_numpy", f), ("to_numpy", t)):
                if old is None:
                    be.__dict__.pop(name, None)
                else:
                    setattr(be, name, old)
        _active.clear()
        _hoststep.recorder[0] = None

    def _wrap_backend(self, be):
        empty, from_numpy, to_numpy = be.empty, be.from_numpy, be.to_numpy
        rec = self

        def rec_empty(shape, dtype, device):
            t = empty(shape, dtype, device)
            if not rec.depth:
                s = rec.new_slot("alloc", t)
                s.backend = be
                s.geom = (tuple(shape), dtype, device)
            return t

        def rec_from_numpy(array, device, non_blocking=False):
            t = from_numpy(array, device, non_blocking) if non_blocking else from_numpy(array, device)
            if not rec.depth:
                s = rec.new_slot("const", t)
                s.backend = be
                s.host = (array.copy(), device)
            return t

        def rec_to_numpy(tensor):
            if not rec.depth:
                rec.brk("a host read of a tensor's values (.item(), bool(), .tolist(), .numpy(), printing, a "
                        "python branch on a tensor)")
            return to_numpy(tensor)

        be.empty, be.from_numpy, be.to_numpy = rec_empty, rec_from_numpy, rec_to_numpy

    def _swap_grad_slot(self):
        rec = self
        get, put = _GRAD_SLOT.__get__, _GRAD_SLOT.__set__

        def read(t):
            g = get(t, Tensor)
            if not rec.depth and id(t) not in rec.grad_first:
                rec.grad_first[id(t)] = (t, g)
                if g is not None and id(g) not in rec.slot_of:
                    owner = rec.slot(t)
                    if owner.kind in ("input", "ext"):  # read live from its owner at replay
                        rec.new_slot("grad", g).base = owner.n
            return g

        def write(t, g):
            try:
                get(t, Tensor)
            except AttributeError:  # a tensor being made: its first value, not a write to replay
                put(t, g)
                return
            put(t, g)
            if not rec.depth:
                rec.grad_first.setdefault(id(t), (t, _WRITTEN))
                step = Step(len(rec.steps), store_grad, "set_grad", (rec.encode(t), rec.encode(g)), {}, None)
                rec.steps.append(step)

        Tensor._grad = property(read, write)

    # -- breaks, guards, training steps --------------------------------------------------------
    def brk(self, reason: str) -> None:
        b = Break(reason, user_frame())
        if any(x.reason == reason and x.where == b.where for x in self.breaks):
            return  # (one line met the same break again: seeding every device's generator)
        self.breaks.append(b)
        if self.fullgraph:
            raise b

    def module_called(self, module) -> None:
        """``Module.__call__`` reports each module it runs inside the call."""
        if not self.depth and id(module) not in self.modules_called:
            self.modules_called[id(module)] = (module, dict(module.__dict__))

    def retry(self, reason: str) -> None:
        """The call runs eagerly and the next call with the same guards captures again (state made
        by this call, such as an optimizer's first step, will be there then)."""
        if self.retry_reason is None:
            self.retry_reason = reason

    def add_guard(self, fn) -> None:
        """``fn() -> bool`` must be true for the recording to replay (checked before each replay)."""
        self.guards.append(fn)

    def backward_pass(self, nodes, retain_graph: bool, create_graph: bool, hooks: bool) -> None:
        """Called by the engine when a backward pass starts inside the call (``nodes``: the graph
        nodes it reaches; ``hooks``: whether a python hook or callback will run in it)."""
        if self.depth:
            return
        if hooks:
            self.brk("a python hook (tensor, node, post-accumulate hook or queued callback) runs in a backward "
                     "pass inside the compiled call")
        if self.backward_ok:
            return
        if create_graph:
            self.brk("a backward pass with create_graph=True inside the compiled call")
        elif retain_graph:
            self.brk("a backward pass with retain_graph=True inside the compiled call")
        self.step_mode = True
        self.consumed.update(nodes)

    # -- slots ---------------------------------------------------------------------------------
    def new_slot(self, kind, t) -> Slot:
        s = Slot(len(self.slots), kind, t)
        self.slots.append(s)
        self.slot_of[id(t)] = s
        self._keep.append(t)
        st = t._storage
        if st is not None and id(st) not in self.storage_of:
            self.storage_of[id(st)] = s
        v = t._version
        if id(v) not in self.versions:
            self.versions[id(v)] = [v, v[0], 0, s]
        if t._requires_grad and self.grad_mode:
            self.grad_seen = True
        return s

    def add_input(self, t, index) -> None:
        if id(t) not in self.slot_of:
            self.new_slot("input", t).index = index

    def slot(self, t) -> Slot:
        """The slot of tensor ``t``, making one for a tensor met for the first time."""
        s = self.slot_of.get(id(t))
        if s is not None:
            return s
        owner = self.storage_of.get(id(t._storage)) if t._storage is not None else None
        if owner is None and t._base is not None and t._base._storage is t._storage:
            owner = self.slot(t._base)  # a view of a tensor not met yet (a parameter's .t()): its base is the slot
        if owner is not None:
            s = self.new_slot("alias", t)
            s.base = owner.n
            s.geom = (t._shape, t._stride, t._offset - owner.tensor._offset)
            return s
        if t._storage is None:
            self.brk("a batched (vmap) tensor inside the capture")
        return self.new_slot("ext", t)

    def encode(self, a):
        if isinstance(a, Tensor):
            return Ref(self.slot(a).n)
        if a.__class__ in (list, tuple) and a and any(isinstance(x, Tensor) for x in a):
            return a.__class__(self.encode(x) for x in a)
        return a

    # -- kernels -------------------------------------------------------------------------------
    def kernel(self, name: str, real):
        key = (name, id(real))
        fn = self._cache.get(key)
        if fn is None:
            k = real.get(name)
            if k is None:
                return None
            fn = self._cache[key] = self._make(name, k, getattr(real, "backend", None))
        return fn

    def _make(self, name, k, backend):
        rec = self

        def recorded(*args, **kw):
            if rec.depth:
                return k(*args, **kw)
            if name in DATA_DEPENDENT:
                rec.brk(f"{name}: the output's shape depends on the input's values")
            step = Step(len(rec.steps), k, name, tuple(rec.encode(a) for a in args),
                        {key: rec.encode(v) for key, v in kw.items()}, backend)
            vers = [rec.versions[id(t._version)] for t in _tensors(args, kw)]
            before = [e[0][0] for e in vers]
            rec.depth += 1
            try:
                out = k(*args, **kw)
            finally:
                rec.depth -= 1
            for e, b in zip(vers, before):
                e[2] += e[0][0] - b
            rec.steps.append(step)
            rec._outputs(step, out)
            return out

        recorded.__name__ = f"recorded_{name}"
        return recorded

    def host_step(self, fn, args, kw):
        """Run a host step (:mod:`ember._hoststep`) and record one step that runs it again. A
        tensor it returns is a new slot; where it returned a tensor the recording knows (an
        argument), the capture goes on with a copy, because the replay may return another."""
        step = Step(len(self.steps), fn, "host_" + fn.__name__, tuple(self.encode(a) for a in args),
                    {key: self.encode(v) for key, v in kw.items()}, None)
        self.depth += 1
        try:
            out = fn(*args, **kw)
        finally:
            self.depth -= 1
        self.steps.append(step)
        if isinstance(out, Tensor):
            out = self._fresh(out)
        elif isinstance(out, tuple):
            out = tuple(self._fresh(o) if isinstance(o, Tensor) else o for o in out)
        self._outputs(step, out)
        return out

    def _fresh(self, t):
        if id(t) not in self.slot_of:
            return t
        if t._requires_grad:
            self.brk("a host step returned a tensor taking part in autograd")
            return t
        # a copy, with its own storage: the views the capture takes of it must be views of the
        # step's result (which at replay may be another tensor), not of the argument's storage
        self.depth += 1
        try:
            return t.clone()
        finally:
            self.depth -= 1

    def _outputs(self, step, out) -> None:
        if isinstance(out, Tensor):
            step.outs = (self._out_slot(out, step),)
        elif out.__class__ in (tuple, list) or isinstance(out, tuple):
            step.multi = True
            outs = []
            for o in out:
                if isinstance(o, Tensor):
                    outs.append(self._out_slot(o, step))
                else:
                    if o is not None:
                        self.brk(f"kernel {step.name} returned a host value ({type(o).__name__})")
                    outs.append(None)
            step.outs = tuple(outs)
        elif out is not None:
            self.brk(f"kernel {step.name} returned a host value ({type(out).__name__})")

    def _out_slot(self, o, step):
        if id(o) in self.slot_of:
            return None  # the kernel returned an argument (an in-place primitive, out=)
        s = self.new_slot("kernel", o)
        s.step = step.n
        return s.n


def _tensors(args, kw):
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif a.__class__ in (list, tuple):
            for x in a:
                if isinstance(x, Tensor):
                    yield x
    for v in kw.values():
        if isinstance(v, Tensor):
            yield v
