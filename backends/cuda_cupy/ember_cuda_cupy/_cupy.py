"""cupy, imported on first use, and why the cuda device is unavailable when it is.

Every reason starts with "no CUDA device" and names what failed: cupy missing (with the install
command that works here: cupy's own wheels, or this checkout's folder), no NVIDIA driver or GPU
(the CUDA runtime's ``getDeviceCount`` fails with ``cudaErrorInsufficientDriver`` when the driver
library is absent, which reads as a version problem; the driver library is looked for to tell),
or the runtime's error as it is, so ``ember info`` and skipped tests say what to fix.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading

_lock = threading.Lock()
_state: dict = {}

#: the NVIDIA driver's library, which the CUDA runtime loads
DRIVER_LIBRARY = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
_NO_DEVICE, _INSUFFICIENT_DRIVER = 100, 35  # cudaErrorNoDevice, cudaErrorInsufficientDriver


def install_hint() -> str:
    """How to install cupy: its wheel for the driver's CUDA major version, or the backend's extra
    from the checkout this backend runs from (the ember packages may be on no index)."""
    hint = "pip install cupy-cuda12x (CUDA 12 drivers) or cupy-cuda13x (CUDA 13)"
    folder = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if os.path.isfile(os.path.join(folder, "pyproject.toml")):  # an editable install from a checkout
        rel = os.path.relpath(folder)
        return f"{hint}, or from this checkout pip install -e '{folder if rel.startswith('..') else rel}[cuda12]'"
    return f"{hint}, or pip install 'ember-cuda-cupy[cuda12]'"


def _driver_loadable() -> bool:
    try:
        ctypes.CDLL(DRIVER_LIBRARY)
    except OSError:
        return False
    return True


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
        return False, f"no CUDA device: cupy is not importable ({type(e).__name__}: {e}); {install_hint()}"
    _state["cupy"] = cupy
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # cupy's CUDARuntimeError: cudaErrorNoDevice, cudaErrorInsufficientDriver, ...
        said = f"(cupy {cupy.__version__}'s CUDA runtime, in getDeviceCount: {type(e).__name__}: {e})"
        status = getattr(e, "status", None)
        if status == _INSUFFICIENT_DRIVER and not _driver_loadable():
            return False, f"no CUDA device: no NVIDIA GPU/driver found ({DRIVER_LIBRARY} can't be loaded) {said}"
        if status == _NO_DEVICE:
            return False, f"no CUDA device: no NVIDIA GPU found (the driver is installed and reports none) {said}"
        if status == _INSUFFICIENT_DRIVER:
            return False, (f"no CUDA device: the NVIDIA driver is older than the CUDA version cupy was built for "
                           f"(cupy-cuda12x needs a CUDA 12 driver, cupy-cuda13x a CUDA 13 one) {said}")
        return False, f"no CUDA device: the CUDA runtime failed {said}"
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
