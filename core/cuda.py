"""``ember.cuda``: the CUDA device API, backed by whichever installed backend serves ``cuda``
(``ember-cuda-cupy``). Without one, ``is_available()`` is False and the rest explains why."""
from __future__ import annotations

from . import _dtype as D
from . import _legacy
from . import _plugins


def _backend(required: bool = True):
    try:
        spec = _plugins.backend_spec("cuda")
    except RuntimeError:
        if required:
            raise
        return None
    try:
        return _plugins.backend_for("cuda")
    except RuntimeError:
        if required:
            raise
        return None
    finally:
        del spec


def is_available() -> bool:
    """True when a cuda backend is installed and sees at least one GPU."""
    be = _backend(required=False)
    return be is not None and be.availability()[0] and be.device_count() > 0


def device_count() -> int:
    be = _backend(required=False)
    return be.device_count() if be is not None and be.availability()[0] else 0


def __getattr__(name):
    # everything else is the backend's: ember.cuda.synchronize, memory_allocated, Stream, ...
    be = _backend(required=False)
    api = getattr(be, "cuda_api", None) if be is not None else None
    if api is not None and hasattr(api, name):
        return getattr(api, name)
    raise AttributeError(f"ember.cuda has no attribute {name!r}" + (
        "" if be is not None else " (no cuda backend is installed: pip install ember-cuda-cupy)"))


for _dt, _name in _legacy.NAMES.items():
    globals()[_name] = _legacy.make(_dt, "cuda", "ember.cuda")
del _dt, _name, D
