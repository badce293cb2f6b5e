"""Fused optimizer updates for cuda: the kernel library's (:class:`ember_cpu_numpy.kernels.Optim`,
the decomposition's arithmetic operation for operation) over cupy, with one difference: as in
PyTorch, Adam's step counter may live on the host (a cpu tensor) and is then counted there, so an
optimizer step queues GPU work only and never waits for the GPU. 16-bit floats take the
decomposition."""
from __future__ import annotations

from ember.backend import mark_written
from ember_cpu_numpy.kernels import Optim


class CudaOptim(Optim):
    """``_fused_sgd_`` and ``_fused_adam_`` over cupy, step counters on the host or the GPU."""

    block = None  # whole arrays: one kernel launch per pass

    def count_step(self, t) -> float:
        """Add one to a step counter and return it: on the host for a cpu tensor (no GPU wait), else
        on the GPU (one read back per step)."""
        if t._device._type == "cpu":
            a = t._host()
            a += 1
            mark_written(t)
            return float(a)
        return super().count_step(t)
