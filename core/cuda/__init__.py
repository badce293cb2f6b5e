"""``ember.cuda``: the CUDA device API, backed by whichever installed backend serves ``cuda``
(``ember-cuda-cupy``). Without one, ``is_available()`` is False and the rest explains why."""
from __future__ import annotations

from .. import _dtype as D
from .. import _legacy
from .. import _plugins
from . import amp  # noqa: F401  (ember.cuda.amp: the deprecated spellings)


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


def _available_api():
    be = _backend(required=False)
    if be is None or not be.availability()[0]:
        return None
    return getattr(be, "cuda_api", None)


def _lazy(name: str, doc: str):
    """A function PyTorch lets scripts call without a GPU: it forwards to the backend when one
    is usable and otherwise does nothing (seeding is also covered by ember.manual_seed)."""
    def fn(*args, **kwargs):
        api = _available_api()
        if api is not None and hasattr(api, name):
            return getattr(api, name)(*args, **kwargs)
        return None
    fn.__name__ = name
    fn.__doc__ = doc
    return fn


manual_seed = _lazy("manual_seed", "Seed the current GPU's generator (a no-op without a usable GPU).")
manual_seed_all = _lazy("manual_seed_all", "Seed every GPU's generator (a no-op without a usable GPU).")
seed = _lazy("seed", "Seed the current GPU's generator randomly (a no-op without a usable GPU).")
seed_all = _lazy("seed_all", "Seed every GPU's generator randomly (a no-op without a usable GPU).")
empty_cache = _lazy("empty_cache", "Release cached GPU memory (a no-op without a usable GPU).")


def is_initialized() -> bool:
    """Whether a GPU has been used in this process."""
    api = _available_api()
    fn = getattr(api, "is_initialized", None) if api is not None else None
    return bool(fn()) if fn is not None else False


def __getattr__(name):
    # everything else is the backend's: ember.cuda.synchronize, memory_allocated, Stream, ...
    be = _backend(required=False)
    api = getattr(be, "cuda_api", None) if be is not None else None
    if api is not None and hasattr(api, name):
        return getattr(api, name)
    raise AttributeError(f"ember.cuda has no attribute {name!r}" + (
        "" if be is not None else f" (no cuda backend is installed: {_plugins.install_command('cuda')})"))


for _dt, _name in _legacy.NAMES.items():
    globals()[_name] = _legacy.make(_dt, "cuda", "ember.cuda")
del _dt, _name, D
