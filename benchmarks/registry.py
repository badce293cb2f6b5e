"""The workload registry. A workload module in ``benchmarks/workloads/`` defines functions
decorated with ``@workload(name, group)``; each receives a :class:`Context` and returns a dict of
implementation name -> zero-argument callable (``"ember"``, ``"numpy"``, ``"torch"``); any
implementation may be missing, and the key ``"note"`` may hold a string for the table. Each
callable must do the whole unit of work (and synchronize the device) so that its wall time is the
workload's time.

The issues' speed targets live here too (:data:`TARGETS`), keyed by backend and workload name, so
that the workload modules stay plain descriptions of work.
"""
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
    """Register ``fn(ctx) -> {impl: callable}`` as a workload (``quick=False``: skipped by ``--quick``)."""
    def deco(fn):
        WORKLOADS.append(Workload(name, group, fn, unit, quick))
        return fn
    return deco


@dataclass(frozen=True)
class Target:
    """A speed target: ember's time against implementation ``against`` (``torch``, ``numpy`` or
    ``ref``, the reference ember backend of ``--against``) must be at most ``limit`` times it
    (``kind="ratio"``), or at most ``limit`` seconds above it (``kind="over"``), or ember's time
    alone at most ``limit`` seconds (``kind="abs"``)."""
    against: str
    limit: float
    kind: str = "ratio"
    issue: str = ""

    def describe(self) -> str:
        if self.kind == "ratio":
            return f"≤ {self.limit:g}x {self.against}"
        if self.kind == "over":
            return f"≤ {self.limit * 1e6:g} µs over {self.against}"
        return f"≤ {self.limit * 1e6:g} µs"

    def measure(self, ratios: dict, times: dict):
        """The measured quantity this target bounds (None when it could not be measured)."""
        e = times.get("ember")
        if e is None:
            return None
        if self.kind == "abs":
            return e
        o = times.get(self.against)
        if o is None:
            return None
        if self.kind == "over":
            return e - o
        return ratios.get(self.against)

    def met(self, value) -> bool | None:
        return None if value is None else value <= self.limit


_MLP = "MLP 784-512-256-10 SGD step b128"
_LENET = "LeNet-5 Adam step b64 (1x28x28)"
_CONVBN = "conv+BN net SGD step b32 (3x32x32)"
_LSTM = "LSTM(128->256) forward+backward, seq 35 x batch 32"
_ENC = "Transformer encoder (2x d128 h4 ff512) Adam step, batch 32 x seq 35"
_ADD = "add 8x8 (overhead)"

# issue 14 (speed against PyTorch CPU on the 2-core machine) and the opencl issue (against cpu_numpy)
TARGETS: dict = {
    "cpu_numpy": {
        _MLP: Target("torch", 1.2, issue="14"),
        _LENET: Target("torch", 1.5, issue="14"),
        _CONVBN: Target("torch", 1.5, issue="14"),
        _LSTM: Target("torch", 2.0, issue="14"),
        _ENC: Target("torch", 2.0, issue="14"),
        _ADD: Target("numpy", 5e-6, "over", issue="14"),
        "matmul 1024^3 f32": Target("numpy", 1.1, issue="3"),
        "rfft 2^20 f32": Target("torch", 1.5, issue="22"),
        **{f"linalg {op} 64x(64x64) f64{tail}": Target("torch", 1.5, issue="22")
           for op, tail in (("solve", ", 8 rhs"), ("inv", ""), ("cholesky", ""), ("qr", ""), ("eigh", ""),
                            ("svd", ""))},
        **{f"complex {op} 1M c64": Target("numpy", 1.5, issue="22") for op in ("add", "mul", "exp", "abs")},
    },
    "opencl": {
        "mul 1M f32": Target("ref", 1.5, issue="opencl"),
        "add scalar 1M f32": Target("ref", 1.5, issue="opencl"),
        "exp 1M f32": Target("ref", 1.5, issue="opencl"),
        "tanh 1M f32": Target("ref", 1.5, issue="opencl"),
        "matmul 1024^3 f32": Target("numpy", 4.0, issue="opencl"),   # >= 25% of numpy's GFLOPS
        _MLP: Target("ref", 3.0, issue="opencl"),
        _LENET: Target("ref", 3.0, issue="opencl"),
        _ADD: Target("ember", 40e-6, "abs", issue="opencl"),
    },
}


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
