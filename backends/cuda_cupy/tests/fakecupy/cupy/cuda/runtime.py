"""fake ``cupy.cuda.runtime``. ``FAKECUPY_DEVICES`` (default 2) sets the device count;
``FAKECUPY_ERROR=nodevice|driver`` makes ``getDeviceCount`` fail as the real runtime does."""
from __future__ import annotations

import os


class CUDARuntimeError(RuntimeError):
    def __init__(self, status: int, msg: str):
        self.status = status
        super().__init__(msg)


_ERRORS = {"nodevice": (100, "cudaErrorNoDevice: no CUDA-capable device is detected"),
           "driver": (35, "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")}
is_hip = False
cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice = 1, 2, 3


def getDeviceCount() -> int:
    err = os.environ.get("FAKECUPY_ERROR")
    if err:
        raise CUDARuntimeError(*_ERRORS[err])
    return int(os.environ.get("FAKECUPY_DEVICES", "2"))


def getDevice() -> int:
    from . import _current_device
    return _current_device().id


def setDevice(i: int) -> None:
    from . import Device, _tls
    n = getDeviceCount()
    if not 0 <= i < n:
        raise CUDARuntimeError(101, "cudaErrorInvalidDevice: invalid device ordinal")
    _tls.device = Device.__new__(Device)
    _tls.device.id, _tls.device._prev = int(i), []


def getDeviceProperties(i: int) -> dict:
    getDeviceCount()
    return {"name": b"Fake GPU (numpy)", "totalGlobalMem": 8 << 30, "major": 9, "minor": 0,
            "multiProcessorCount": 4, "warpSize": 32, "maxThreadsPerBlock": 1024}


def deviceSynchronize() -> None:
    from . import calls
    calls["synchronize"] += 1


def memGetInfo():
    from .memory import default_pool
    total = 8 << 30
    return total - default_pool.total_bytes(), total


def driverGetVersion() -> int:
    return 12040


def runtimeGetVersion() -> int:
    return 12040


def deviceCanAccessPeer(a: int, b: int) -> int:
    return 1
