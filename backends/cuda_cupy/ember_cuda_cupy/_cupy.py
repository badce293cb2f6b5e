"""cupy, imported on first use, and why the cuda device is unavailable when it is.

Every reason starts with "no CUDA device" and names what failed: cupy missing (with the install
command), or the CUDA runtime's error from ``getDeviceCount`` (``cudaErrorNoDevice``,
``cudaErrorInsufficientDriver``...), so ``ember info`` and skipped tests say what to fix.
"""
from __future__ import annotations

import threading

_lock = threading.Lock()
_state: dict = {}

INSTALL = "pip install 'ember-cuda-cupy[cuda12]' (CUDA 12 drivers) or 'ember-cuda-cupy[cuda13]' (CUDA 13)"


def module():
    """The cupy module (RuntimeError with the reason when cupy can't be imported)."""
    cp = _state.get("cupy")
    if cp is not None:
        return cp
    ok, reason = availability()
    cp = _state.get("cupy")
    if cp is None:
        raise RuntimeError(reason)
    return cp


def availability() -> tuple:
    """``(True, "")`` or ``(False, reason)``; never raises, cached."""
    r = _state.get("availability")
    if r is not None:
        return r
    with _lock:
        r = _state.get("availability")
        if r is None:
            r = _probe()
            _state["availability"] = r
    return r


def _probe() -> tuple:
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # cupy warns about optional libraries (NCCL, cuTENSOR) it can't find
            import cupy
    except Exception as e:  # ImportError, or a broken install raising anything
        return False, f"no CUDA device: cupy is not importable ({type(e).__name__}: {e}); install it with {INSTALL}"
    _state["cupy"] = cupy
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # cupy's CUDARuntimeError: cudaErrorNoDevice, cudaErrorInsufficientDriver, ...
        return False, (f"no CUDA device: cupy {cupy.__version__} is installed but the CUDA runtime failed in "
                       f"getDeviceCount: {type(e).__name__}: {e}")
    if n <= 0:
        return False, "no CUDA device: the CUDA runtime reports 0 devices"
    _state["count"] = n
    return True, ""


def device_count() -> int:
    return _state.get("count", 0) if availability()[0] else 0


def reset() -> None:
    """Forget the cached probe (tests that change what the fake cupy reports)."""
    with _lock:
        _state.clear()
