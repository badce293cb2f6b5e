"""``ember.compile``: the compiled callable, its cache of programs keyed by guards, breaks, explain.

A call computes its guard key (:func:`._guards.call_key`). A cached program replays; a cached
eager entry (the capture broke, or the call needed autograd) runs the function as written; a new
key captures: the function runs eagerly once under a :class:`._capture.Recorder` and, if nothing
broke, the recording becomes a program (:func:`._program.build`): a plain one, a whole training
step's (a backward pass ran inside the call), or a forward hanging one autograd node
(:mod:`._train`: the call took part in autograd). More than
``config.cache_size_limit`` keys for one function: the further ones run eagerly, with one warning.
"""
from __future__ import annotations

import functools
import threading
import warnings
import weakref

from .. import _devices
from .._tensor import Tensor
from ..profiler import _record as _profiler_state
from ..profiler.profiler import record_function
from . import _capture as C
from . import _fusion
from . import _guards as G
from . import _train
from ._config import config
from ._program import MISS, SKIP, _refs, build, encode_output

__all__ = ["compile", "explain", "reset", "disable", "is_compiling", "config", "Unsupported", "InvalidBackend",
           "ExplainOutput", "CompiledFunction", "list_backends", "set_stance"]

MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
BACKENDS = ("inductor", "ember", "eager", "aot_eager")
_lock = threading.RLock()
_profiling = _profiler_state._active  # (a list: non-empty while a profiler records)
STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile", "eager_then_compile",
           "aot_eager_then_compile")
_stance = ["default"]  # set_stance's current stance (one global, as PyTorch's)


class Unsupported(RuntimeError):
    """Raised with ``fullgraph=True`` at the first break (PyTorch's ``torch._dynamo.exc.Unsupported``)."""


class InvalidBackend(RuntimeError):
    """An unknown ``backend=`` name."""


class _Eager:
    """A cache entry whose calls run the function as written, and why."""

    __slots__ = ("reasons",)

    def __init__(self, reasons):
        self.reasons = reasons


_registry = weakref.WeakSet()  # live compiled functions, for reset() (weak: a dropped one frees its programs)
_disabled = threading.local()


class CompiledFunction:
    """What ``ember.compile(fn)`` returns for a function (``__wrapped__`` is ``fn``)."""

    def __init__(self, fn, module=None, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None):
        # first: update_wrapper copies fn's __dict__, which for a compiled fn holds its cache
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._module = module
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.backend = backend
        self.mode = mode
        opts = dict(options or {})
        self._fuse = bool(opts.get("fuse", config.fuse)) and backend in ("inductor", "ember")
        self._reuse = bool(opts.get("reuse_buffers", config.reuse_buffers))
        self._cache: dict = {}
        self._retries: dict = {}  # key -> captures that asked to be made again (Recorder.retry)
        self._warned = False
        self._called = False  # (for the "..._then_compile" stances: whether a call ran yet)
        #: every break met by a capture, newest last (``ember.compiler.explain`` reads them)
        self.breaks: list = []
        self._options = options
        _registry.add(self)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __reduce__(self):
        # a copy (copy.deepcopy, pickle) compiles the copied function afresh: programs hold the
        # original's tensors and must not replay for the copy
        return (CompiledFunction, (self._fn, self._module, self.fullgraph, self.dynamic, self.backend, self.mode,
                                   self._options))

    def __call__(self, *args, **kwargs):
        if C._active or _stance[0] == "force_eager" or getattr(_disabled, "on", False):
            return self._fn(*args, **kwargs)
        flat: list = []
        try:
            key = G.call_key(args, kwargs, flat)
        except G.Unguardable:
            return self._fn(*args, **kwargs)
        entry = self._cache.get(key)
        if entry is not None:
            if entry.__class__ is _Eager:
                return self._fn(*args, **kwargs)
            for i, (prog, mguard) in enumerate(entry):
                if mguard is None or mguard():
                    if _profiling:  # the replay calls kernels directly: a profiler sees it as one range
                        with record_function(f"CompiledFunction: {getattr(self._fn, '__qualname__', 'fn')}"):
                            r = prog.fn(*flat)
                    else:
                        r = prog.fn(*flat)
                    if r is SKIP:
                        continue  # its guards do not hold now; they may again later
                    if r is not MISS:
                        return r
                    del entry[i]  # an external tensor changed: capture again
                    break
        return self._capture(key, flat, args, kwargs)

    def programs(self) -> list:
        """The programs cached now (for tests and ``explain``)."""
        return [p for e in self._cache.values() if e.__class__ is not _Eager for p, _ in e]

    def _capture(self, key, flat, args, kwargs):
        if self._module is not None and any(m._forward_hooks or m._forward_pre_hooks for m in self._module.modules()):
            # forward hooks are python code every call must run (collecting activations): while
            # the module has them it runs eagerly, without capturing (its guards would never pass)
            return self._fn(*args, **kwargs)
        n = sum(1 if e.__class__ is _Eager else len(e) for e in self._cache.values())
        stance = _stance[0]
        if stance != "default":
            if stance.endswith("then_compile") and not self._called:  # the first call runs eagerly
                self._called = True
                return self._fn(*args, **kwargs)
            if n and stance == "eager_on_recompile":
                return self._fn(*args, **kwargs)
            if n and stance == "fail_on_recompile":
                raise RuntimeError(f"Detected recompile when torch.compile stance is 'fail_on_recompile': "
                                   f"{getattr(self._fn, '__qualname__', self._fn)} met arguments or state that "
                                   "no cached program's guards accept")
        self._called = True
        if n >= max(1, min(config.cache_size_limit, config.recompile_limit)):
            if not self._warned:
                self._warned = True
                warnings.warn(f"ember.compile: {getattr(self._fn, '__qualname__', self._fn)} reached "
                              f"config.cache_size_limit ({config.cache_size_limit}) captures; further new "
                              "guards run eagerly", RuntimeWarning, stacklevel=3)
            return self._fn(*args, **kwargs)
        with _lock:
            devices = set(_devices._canon.values())
            rec = C.Recorder(devices, self.fullgraph)
            for i, t in enumerate(flat):
                rec.add_input(t, i)
            snap = G.module_snapshot(self._module) if self._module is not None else None
            variables = G.function_snapshot(self._fn) + G.argument_snapshot(key)
            try:
                with rec:
                    out = self._fn(*args, **kwargs)
                    enc = encode_output(rec, out)
                    self._after(rec, devices, snap, variables)
            except C.Break as b:
                self.breaks.append(b)
                raise Unsupported(f"ember.compile(fullgraph=True): {b}") from None
            if rec.step_mode and not rec.breaks:
                _check_step_outputs(rec, enc)
            if rec.breaks:
                self.breaks.extend(rec.breaks)
                self._cache[key] = _Eager(rec.breaks)
                return out
            if rec.retry_reason is not None:
                tries = self._retries[key] = self._retries.get(key, 0) + 1
                if tries > config.max_capture_retries:
                    b = C.Break(f"{rec.retry_reason} (again after {tries - 1} captures); the call runs eagerly")
                    self.breaks.append(b)
                    self._cache[key] = _Eager([b])
                return out
            if rec.step_mode:  # a whole training step: forward, backward, optimizer as one program
                prog = build(rec, enc, len(flat), reuse=self._reuse, fuse=_fusion.fuse if self._fuse else None)
            elif rec.grad_seen:
                try:
                    prog = _train.TrainProgram(rec, enc, len(flat), flat, devices)
                except _train.Unsupported as e:
                    b = C.Break(f"autograd: {e}; the call runs eagerly")
                    self.breaks.append(b)
                    self._cache[key] = _Eager([b])
                    return out
                out = prog.wrap_capture(out)
            else:
                prog = build(rec, enc, len(flat), reuse=self._reuse, fuse=_fusion.fuse if self._fuse else None)
            modules = self._modules_run(rec)
            mguard = _state_guard(modules, variables)
            _pin_shared_inputs(prog, flat, modules, variables)
            entry = self._cache.get(key)
            if entry is None or entry.__class__ is _Eager:
                entry = self._cache[key] = []
            entry.append((prog, mguard))
            return out

    def _after(self, rec, devices, snap, variables):
        if set(_devices._canon.values()) - devices:
            rec.brk("a device was used for the first time inside the capture")
        # the compiled module's own, and those of the modules the call ran without owning them
        own = {id(m) for m, _ in snap} if snap is not None else set()
        changed = G.changed_attributes((snap or []) + [pair for k, pair in rec.modules_called.items() if k not in own])
        if changed:
            rec.brk("module attributes assigned inside the call: " + ", ".join(sorted(changed)[:5]))
        changed = G.changed_variables(variables)
        if changed:
            rec.brk("python variables the compiled function reads were assigned inside the call: "
                    + ", ".join(sorted(changed)[:5]))
        added = G.added_attributes(variables)
        if added:
            rec.retry("attributes were added to an argument inside the call (" + ", ".join(added[:5])
                      + "); the next call captures again")

    def _modules_run(self, rec) -> list:
        """The compiled module and its submodules, then every other module the call ran (a global
        model a compiled step calls), each once."""
        modules = list(self._module.modules()) if self._module is not None else []
        seen = {id(m) for m in modules}
        return modules + [m for k, (m, _) in rec.modules_called.items() if k not in seen]


def _state_guard(modules, variables):
    """What must hold besides the key for a program to replay: the state of every module the call
    ran (a global model switched to eval mode must not replay its training program), and the
    python variables the function reads (its globals, closure, and its arguments' attributes)."""
    guards = [g for g in (G.modules_guard(modules) if modules else None, G.variables_guard(variables))
              if g is not None]
    if not guards:
        return None
    if len(guards) == 1:
        return guards[0]
    first, second = guards
    return lambda: first() and second()


def _check_step_outputs(rec, enc) -> None:
    """In a training step (a backward pass inside the call) every output taking part in autograd
    must have had its graph run by that pass: the replay returns tensors without history."""
    for n in _refs(enc, []):
        t = rec.slots[n].tensor
        fn = t._grad_fn
        if t._requires_grad and fn is not None and fn not in rec.consumed:
            rec.brk("an output of a compiled training step has a graph that no backward pass inside the call ran; "
                    "the replay would return it without history")
            return


def _check(fullgraph, dynamic, backend, mode, options):
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODES)}")
    if backend is None:
        backend = "inductor"
    if callable(backend):
        raise InvalidBackend("ember.compile: custom backend callables (FX graph compilers) are not supported; "
                             f"use one of {', '.join(BACKENDS)}")
    if backend not in BACKENDS:
        raise InvalidBackend(f"Invalid backend: {backend!r}, see `ember.compiler.list_backends()` for available "
                             "backends.")
    return backend


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The ``backend=`` names ember.compile accepts."""
    return sorted(BACKENDS)


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor", mode=None, options=None,
            disable: bool = False, **kwargs):
    """Compile ``model`` (a function or an ``nn.Module``; decorator form without it): the first call
    for given guards runs eagerly while its kernel calls are recorded, later calls that pass the
    guards replay them (docs/compile.md). ``fullgraph=True`` raises :class:`Unsupported` at the
    first break; ``dynamic`` is accepted (shapes are always specialised: a new shape captures
    again); ``backend`` is "inductor" (the default: replay with fusion), "ember", or "eager" /
    "aot_eager" (replay without fusion); ``mode`` one of PyTorch's names; ``options`` may set
    ``fuse`` and ``reuse_buffers``; ``disable=True`` returns ``model`` unchanged."""
    backend = _check(fullgraph, dynamic, backend, mode, options)

    def wrap(m):
        if disable:
            return m
        if _is_module(m):
            return _optimized_module(m, fullgraph, dynamic, backend, mode, options)
        if not callable(m):
            raise RuntimeError(f"ember.compile: expected a callable or an nn.Module, got {type(m).__name__}")
        return CompiledFunction(m, None, fullgraph, dynamic, backend, mode, options)

    if model is None:
        return wrap
    return wrap(model)


def compile_module_forward(module, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None):
    """``module``'s forward compiled, with the module's state guarded (``nn.Module.compile``)."""
    backend = _check(fullgraph, dynamic, backend, mode, options)
    return CompiledFunction(type(module).forward.__get__(module), module, fullgraph, dynamic, backend, mode, options)


def _is_module(m) -> bool:
    return any(c.__name__ == "Module" and c.__module__ == "ember.nn.modules.module" for c in type(m).__mro__)


class OptimizedModule:
    """The base of what ``ember.compile(module)`` returns (PyTorch's ``OptimizedModule``):
    ``_orig_mod`` is the module; reading, setting and deleting attributes, ``training`` and
    ``len()`` go to it; calling runs the compiled forward. A copy (``copy.deepcopy``, pickle)
    copies the module and compiles the copy afresh."""

    _own = frozenset({"_orig_mod", "_compiled"})

    def _orig(self):
        mods = self.__dict__.get("_modules")
        return mods.get("_orig_mod") if mods else None

    @property
    def training(self) -> bool:
        orig = self._orig()
        return True if orig is None else orig.training

    @training.setter
    def training(self, value: bool) -> None:
        orig = self._orig()
        if orig is not None:  # (Module.__init__ sets it before there is a module to mirror)
            orig.training = value

    def __getattr__(self, name):
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

    def _kept_here(self, name) -> bool:
        """Whether attribute ``name`` is the wrapper's own (while it is being built, its two slots,
        a class attribute such as ``training``) rather than the original module's."""
        return self._orig() is None or name in OptimizedModule._own or hasattr(type(self), name)

    def __setattr__(self, name, value):
        if self._kept_here(name):
            super().__setattr__(name, value)
        else:
            setattr(self._orig(), name, value)

    def __delattr__(self, name):
        if self._kept_here(name):
            super().__delattr__(name)
        else:
            delattr(self._orig(), name)

    def __len__(self) -> int:
        orig = self._orig()
        if hasattr(type(orig), "__len__"):
            return len(orig)
        raise TypeError(f"{type(orig).__name__} does not support len()")

    def __dir__(self):
        own = super().__dir__()
        return sorted(set(dir(self._orig())) | set(own))

    def __reduce__(self):
        c = self.__dict__["_compiled"]
        return (_optimized_module, (self._orig(), c.fullgraph, c.dynamic, c.backend, c.mode, c._options))

    def forward(self, *args, **kwargs):
        return self.__dict__["_compiled"](*args, **kwargs)

    def __call__(self, *args, **kwargs):
        return self._modules["_orig_mod"].__class__.__call__.__get__(self)(*args, **kwargs)


_classes: dict = {}


def _optimized_module(m, fullgraph, dynamic, backend, mode, options):
    base = next(c for c in type(m).__mro__ if c.__name__ == "Module" and c.__module__ == "ember.nn.modules.module")
    cls = _classes.get(base)
    if cls is None:
        cls = _classes[base] = type("OptimizedModule", (OptimizedModule, base), {"__module__": "ember.compiler"})
    om = cls()
    om._orig_mod = m
    om.__dict__["_compiled"] = CompiledFunction(type(m).__call__.__get__(m), m, fullgraph, dynamic, backend, mode,
                                                options)
    return om


def reset() -> None:
    """Drop every compiled function's programs (``torch._dynamo.reset``)."""
    for f in list(_registry):
        f._cache.clear()
        f._retries.clear()
        f._warned = False


class disable:
    """Run ``fn`` (or the ``with`` block) without compiling: compiled functions called from it run
    eagerly (``torch.compiler.disable``)."""

    def __new__(cls, fn=None, recursive=True, *, reason=None):
        self = super().__new__(cls)
        if fn is None:
            return self

        @functools.wraps(fn)
        def run(*a, **k):
            with self:
                return fn(*a, **k)
        return run

    def __enter__(self):
        self._prev = getattr(_disabled, "on", False)
        _disabled.on = True
        return self

    def __exit__(self, *exc):
        _disabled.on = self._prev


def _pin_shared_inputs(prog, flat, modules, variables) -> None:
    """An argument that is also a tensor the function reaches another way (a global or closure
    tensor, a parameter, buffer or tensor attribute of a module it runs) was one tensor to the
    capture: the program reads that input for both. It replays only for that same object; another
    tensor in its place (SKIP) gets a capture of its own."""
    others = {id(v) for _, _, v in variables if isinstance(v, Tensor)}
    for m in modules:
        d = m.__dict__
        for table in (d.get("_parameters") or {}, d.get("_buffers") or {}, d):
            others.update(id(v) for v in table.values() if isinstance(v, Tensor))
    pins = [(i, t) for i, t in enumerate(flat) if id(t) in others]
    if not pins:
        return
    run = prog.fn

    def pinned(*now):
        for i, t in pins:
            if now[i] is not t:
                return SKIP
        return run(*now)
    prog.fn = pinned


class set_stance:
    """Set how compiled functions behave (``torch.compiler.set_stance``): as a call (until the next
    one), a ``with`` block or a decorator (during the decorated function's calls). ``stance``:
    "default"; "force_eager" (compiled functions run as written); "eager_on_recompile" (cached
    programs replay, new guards run eagerly instead of capturing); "fail_on_recompile" (new guards
    raise ``RuntimeError`` once a function has a program); "eager_then_compile" and
    "aot_eager_then_compile" (each function's first call runs eagerly, later ones capture).
    ``skip_guard_eval_unsafe`` is accepted and ignored (guards are always checked);
    ``force_backend`` is accepted with the default stance."""

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False, force_backend=None):
        if stance not in STANCES:
            raise RuntimeError(f"ember.compiler.set_stance: unknown stance {stance!r}; expected one of "
                               f"{', '.join(STANCES)}")
        if force_backend is not None and stance != "default":
            raise RuntimeError("non-default stance cannot have force_backend set")
        if C._active:
            raise RuntimeError("attempted to set_stance in a torch.compile region")
        self.stance = stance
        self.prev = _stance[0]
        _stance[0] = stance

    def __enter__(self):
        _stance[0] = self.stance

    def __exit__(self, *exc):
        _stance[0] = self.prev

    def __call__(self, fn):
        _stance[0] = self.prev  # a decorator: the stance holds only while ``fn`` runs

        @functools.wraps(fn)
        def run(*a, **k):
            before = _stance[0]
            _stance[0] = self.stance
            try:
                return fn(*a, **k)
            finally:
                _stance[0] = before
        return run


def is_compiling() -> bool:
    """True while a capture records (inside the first call of a compiled function)."""
    return C.capturing()


class ExplainOutput:
    """What :func:`explain` found: ``graph_count`` (programs captured), ``graph_break_count``,
    ``break_reasons`` (:class:`~ember.compiler._capture.Break`: ``reason``, ``where``),
    ``op_count`` (kernel calls recorded), ``ops_per_graph`` (kernel names per program)."""

    def __init__(self, graphs, breaks):
        self.graphs = graphs
        self.graph_count = len(graphs)
        self.break_reasons = list(breaks)
        self.graph_break_count = len(self.break_reasons)
        self.ops_per_graph = [[s.name for s in p.steps] for p in graphs]
        self.op_count = sum(p.n_kernels for p in graphs)

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}"]
        if self.break_reasons:
            lines.append("Break Reasons:")
            lines += [f"  {i + 1}. {b.reason}" + (f"\n     at {b.where}" if b.where else "")
                      for i, b in enumerate(self.break_reasons)]
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn, *args, **kwargs):
    """Capture ``fn`` on these arguments and report the programs and breaks (``explain(fn)(*args)``
    as ``torch._dynamo.explain``; ``explain(fn, *args)`` also works). The call runs once."""
    def run(*a, **k):
        cf = compile(fn)
        if isinstance(cf, CompiledFunction):
            cf(*a, **k)
        else:
            cf.__dict__["_compiled"](*a, **k)
            cf = cf.__dict__["_compiled"]
        breaks = [b for e in cf._cache.values() if e.__class__ is _Eager for b in e.reasons]
        return ExplainOutput(cf.programs(), breaks)
    if args or kwargs:
        return run(*args, **kwargs)
    return run
