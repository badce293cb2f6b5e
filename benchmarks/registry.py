"""The workload registry. A workload module in ``benchmarks/workloads/`` defines functions
decorated with ``@workload(name, group)``; each receives a :class:`Context` and returns a dict of
implementation name -> zero-argument callable (``"ember"``, ``"numpy"``, ``"torch"``); any
implementation may be missing. Each callable must do the whole unit of work (and synchronize the
device) so that its wall time is the workload's time."""
from __future__ import annotations

from dataclasses import dataclass, field

WORKLOADS: list = []


@dataclass
class Workload:
    name: str
    group: str
    fn: object
    unit: str = "call"
    quick: bool = True


def workload(name: str, group: str = "", unit: str = "call", quick: bool = True):
    def deco(fn):
        WORKLOADS.append(Workload(name, group, fn, unit, quick))
        return fn
    return deco


@dataclass
class Context:
    backend: str            # ember backend name (cpu_numpy, opencl, cuda_cupy)
    device: str             # its device string for ember
    torch: object = None    # the torch module when installed, else None
    torch_device: str = "cpu"
    extra: dict = field(default_factory=dict)

    def sync(self):
        """Wait for queued ember work on the device."""
        d = self.extra.get("_dev")
        if d is None:
            from ember import _devices
            d = self.extra["_dev"] = _devices.canonical(self.device)
            self.extra["_sync"] = d._backend.synchronize
        self.extra["_sync"](d)

    def torch_sync(self):
        if self.torch is not None and self.torch_device.startswith("cuda"):
            self.torch.cuda.synchronize()
