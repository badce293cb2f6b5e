"""Process- and thread-level switches read on the hot path: grad mode, autocast, anomaly detection, thread
counts and the default device."""
from __future__ import annotations

import threading


class _GradState(threading.local):
    # class attributes are the defaults every new thread starts with, as in PyTorch
    enabled = True
    inference = False
    saved_hooks = None      # the innermost ``saved_tensors_hooks`` (pack, unpack) pair, or None
    hooks_disabled = None   # ``disable_saved_tensors_hooks``'s error message, or None


grad = _GradState()

#: counts attribute assignments and deletions on every ``nn.Module`` (``Module.__setattr__`` and
#: ``__delattr__`` add one): ember.compile's module guards compare attributes only after it moved
module_attribute_writes = [0]

#: how many ``saved_tensors_hooks`` blocks are open in all threads: ``record`` reads this plain
#: list first, and the thread's ``grad.saved_hooks`` only when some thread has hooks
saved_hooks_open = [0]
_hooks_lock = threading.Lock()


def count_saved_hooks(step: int) -> None:
    """Open (+1) or close (-1) a ``saved_tensors_hooks`` block in :data:`saved_hooks_open`."""
    with _hooks_lock:
        saved_hooks_open[0] += step


class grad_disabled:
    """Grad mode off inside a ``with`` block (the internal one; the public, decorator-capable
    context manager is ``ember.no_grad``)."""

    __slots__ = ("prev",)

    def __enter__(self):
        self.prev = grad.enabled
        grad.enabled = False

    def __exit__(self, *exc):
        grad.enabled = self.prev


class _Anomaly:
    enabled = False
    check_nan = True


anomaly = _Anomaly()


class _Threads:
    n = None  # ember.set_num_threads; None: each backend's default
    interop = 1  # ember.set_num_interop_threads: recorded only (ops run on the caller's thread)


threads = _Threads()


class _DefaultDevice:
    """The device factories use when ``device=`` is not given: the innermost ``with
    ember.device(...)`` block, else :func:`ember.set_default_device`'s (None: cpu). Holds device
    specs; factories make them canonical."""

    def __init__(self):
        self.stack: list = []   # `with ember.device(...)` blocks, innermost last
        self.value = None       # ember.set_default_device

    def current(self):
        return self.stack[-1] if self.stack else self.value


default_device = _DefaultDevice()


class _AutocastState(threading.local):
    """Autocast (``ember.autocast``), per thread as in PyTorch: a new thread starts disabled with
    the default dtypes. ``active`` is what the op fronts read: True while autocast is enabled for
    some device type and not suspended (inside an autocast op, or ``custom_fwd``'s region)."""

    def __init__(self):
        self.enabled: dict = {}     # device type -> bool
        self.dtype: dict = {}       # device type -> ember dtype (absent: the device type's default)
        self.cache_enabled = True
        self.nesting = 0
        self.cache: dict = {}       # id(weight) -> (weight, its low-precision cast)
        self.suspended = 0
        self.active = False

    def refresh(self) -> None:
        self.active = self.suspended == 0 and any(self.enabled.values())


autocast = _AutocastState()


class _VmapState(threading.local):
    """``ember.func.vmap`` in this thread: ``levels`` holds one entry per running vmap (innermost
    last) and ``depth`` its length, which the op fronts read once `vmap_open` says a vmap runs;
    ``call`` is the batching handler ``ember.func`` installs: ``call(op, front, *args, **kwargs)``."""

    call = None

    def __init__(self):
        self.levels: list = []
        self.depth = 0


vmap = _VmapState()

#: how many ``vmap`` calls are running in all threads: the op fronts read this plain list first
#: (a global read, cheaper than the thread-local ``vmap.depth``) and the thread's depth only when
#: some thread is inside a vmap. ``enter_vmap``/``exit_vmap`` keep it.
vmap_open = [0]
_vmap_lock = threading.Lock()


def enter_vmap(level_entry) -> None:
    with _vmap_lock:
        vmap_open[0] += 1
    vmap.levels.append(level_entry)
    vmap.depth = len(vmap.levels)


def exit_vmap() -> None:
    vmap.levels.pop()
    vmap.depth = len(vmap.levels)
    with _vmap_lock:
        vmap_open[0] -= 1
