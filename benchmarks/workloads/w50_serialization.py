"""Checkpoint speed: ember.save / ember.load of a 200 MB state dict (50 float32 tensors of 1M
elements) against numpy writing and reading the same bytes (one ``np.save`` / ``np.load`` per
array into one file) and ``torch.save`` / ``torch.load`` of the same state dict.

Files go to a temporary directory (removed at exit). ``ember.save`` fsyncs by default (that is
what makes its rename crash safe), so the "fsync" rows make every side fsync; the "no fsync" row
compares ``ember.save(fsync=False)`` with plain ``np.save``.
"""
import atexit
import os
import shutil
import tempfile

import numpy as np

import ember
from benchmarks.registry import workload

_N, _SHAPE = 50, (1024, 1024)      # 50 x 4 MiB = 200 MiB
_state: dict = {}


def _setup(ctx):
    if _state:
        return _state
    d = tempfile.mkdtemp(prefix="ember-bench-w50-")
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    rng = np.random.default_rng(0)
    arrays = {f"layer{i}.weight": rng.standard_normal(_SHAPE, dtype=np.float32) for i in range(_N)}
    _state.update(dir=d, arrays=arrays,
                  ember={k: ember.tensor(v, device=ctx.device) for k, v in arrays.items()},
                  torch={k: ctx.torch.from_numpy(v) for k, v in arrays.items()} if ctx.torch is not None else None)
    return _state


def _path(name):
    return os.path.join(_state["dir"], name)


def _fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _np_save(fsync: bool):
    def run():
        with open(_path("np.bin"), "wb") as f:
            for a in _state["arrays"].values():
                np.save(f, a)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
    return run


def _np_load():
    with open(_path("np.bin"), "rb") as f:
        return [np.load(f) for _ in range(_N)]


@workload("save 200 MB state dict (fsync)", "serialization", unit="200 MB", quick=False)
def save_fsync(ctx):
    s = _setup(ctx)
    out = {"ember": lambda: ember.save(s["ember"], _path("e.pt")), "numpy": _np_save(True)}
    if s["torch"] is not None:
        def t():
            ctx.torch.save(s["torch"], _path("t.pt"))
            _fsync_path(_path("t.pt"))
        out["torch"] = t
    return out


@workload("save 200 MB state dict (no fsync)", "serialization", unit="200 MB", quick=False)
def save_nofsync(ctx):
    s = _setup(ctx)
    out = {"ember": lambda: ember.save(s["ember"], _path("e.pt"), fsync=False), "numpy": _np_save(False)}
    if s["torch"] is not None:
        out["torch"] = lambda: ctx.torch.save(s["torch"], _path("t.pt"))
    return out


@workload("load 200 MB state dict", "serialization", unit="200 MB", quick=False)
def load(ctx):
    s = _setup(ctx)
    ember.save(s["ember"], _path("e.pt"), fsync=False)
    _np_save(False)()

    def e():
        sd = ember.load(_path("e.pt"), map_location=ctx.device)
        ctx.sync()
        return sd
    out = {"ember": e, "numpy": _np_load}
    if s["torch"] is not None:
        ctx.torch.save(s["torch"], _path("t.pt"))
        out["torch"] = lambda: ctx.torch.load(_path("t.pt"), weights_only=True)
    return out


@workload("load 200 MB state dict (mmap)", "serialization", unit="200 MB", quick=False)
def load_mmap(ctx):
    s = _setup(ctx)
    ember.save(s["ember"], _path("e.pt"), fsync=False)
    _np_save(False)()

    out = {"ember": lambda: ember.load(_path("e.pt"), mmap=True), "note": "lazy: pages are read on first use"}
    if s["torch"] is not None:
        ctx.torch.save(s["torch"], _path("t.pt"))
        out["torch"] = lambda: ctx.torch.load(_path("t.pt"), weights_only=True, mmap=True)
    return out
