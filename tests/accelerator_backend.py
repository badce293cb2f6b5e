"""Test backends for ``ember.accelerator``: device type ``fakeacc``, two devices that keep their
tensors in host memory (cpu_numpy's kernels), and a record of the runtime calls the accelerator
API makes; ``FakeDownPlugin`` registers ``deadacc``, whose driver is missing (no device)."""
import ember
from ember_cpu_numpy.backend import NumpyBackend


class FakeAccelBackend(NumpyBackend):
    calls: list = []

    def __init__(self):
        super().__init__()
        self._current = 0
        self.peak = {0: 100, 1: 7}

    def availability(self):
        return True, ""

    def device_count(self):
        return 2

    def current_device(self):
        return self._current

    def set_device(self, index):
        if not 0 <= index < 2:
            raise RuntimeError(f"fakeacc: invalid device index {index}")
        self._current = index

    def synchronize(self, device=None):
        self.calls.append(("synchronize", str(device)))

    def memory_stats(self, device):
        return {"reserved_bytes.all.current": 64, "allocated_bytes.all.peak": self.peak[device.index],
                "allocated_bytes.all.current": 5 + device.index}

    def reset_peak_memory_stats(self, device):
        self.peak[device.index] = 5 + device.index

    def empty_cache(self, device=None):
        self.calls.append(("empty_cache", device))


class FakeDownBackend(FakeAccelBackend):
    def availability(self):
        return False, "the fake driver is not installed"

    def device_count(self):
        return 0


class FakeAccelPlugin:
    @ember.hookimpl
    def ember_register_backends(self, register):
        register("fakeacc", "fakeacc", "accelerator_backend:FakeAccelBackend", priority=0)


class FakeDownPlugin:
    @ember.hookimpl
    def ember_register_backends(self, register):
        register("deadacc", "deadacc", "accelerator_backend:FakeDownBackend", priority=0)
