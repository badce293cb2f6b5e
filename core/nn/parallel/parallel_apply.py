"""Running replicas side by side, one thread each (the backends release the GIL in their
kernels, and each device has its own queue)."""
from __future__ import annotations

import threading
import traceback
from typing import Any, Sequence

from ... import _state


class _Failure:
    """An exception caught in a worker thread, re-raised in the caller with its traceback."""

    def __init__(self, exc: BaseException, where: str) -> None:
        self.exc = exc
        self.text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.where = where

    def reraise(self):
        msg = f"Caught {type(self.exc).__name__} {self.where}.\nOriginal {self.text}"
        try:
            err = type(self.exc)(msg)
        except Exception:  # an exception type whose constructor wants other arguments
            err = RuntimeError(msg)
        raise err from self.exc


def parallel_apply(modules: Sequence, inputs: Sequence, kwargs_tup: Sequence | None = None,
                   devices: Sequence | None = None) -> list:
    """``[modules[i](*inputs[i], **kwargs_tup[i]) for i]``, the calls running in parallel threads
    under the caller's grad mode; an exception in any of them is raised here, naming the replica."""
    if len(modules) != len(inputs):
        raise ValueError(f"parallel_apply: {len(modules)} modules but {len(inputs)} inputs")
    kwargs_tup = tuple(kwargs_tup) if kwargs_tup is not None else ({},) * len(modules)
    if len(kwargs_tup) != len(modules):
        raise ValueError(f"parallel_apply: {len(modules)} modules but {len(kwargs_tup)} kwargs")
    devices = list(devices) if devices is not None else [None] * len(modules)
    grad_enabled, inference = _state.grad.enabled, _state.grad.inference
    results: dict = {}

    def worker(i, module, inp, kwargs, dev):
        _state.grad.enabled, _state.grad.inference = grad_enabled, inference  # thread-local in ember
        try:
            if not isinstance(inp, (list, tuple)):
                inp = (inp,)
            results[i] = module(*inp, **kwargs)
        except BaseException as e:
            results[i] = _Failure(e, f"in replica {i}" + (f" on device {dev}" if dev is not None else ""))

    if len(modules) > 1:
        threads = [threading.Thread(target=worker, args=(i, m, x, k, d))
                   for i, (m, x, k, d) in enumerate(zip(modules, inputs, kwargs_tup, devices))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        worker(0, modules[0], inputs[0], kwargs_tup[0], devices[0])
    outputs: list[Any] = []
    for i in range(len(inputs)):
        r = results[i]
        if isinstance(r, _Failure):
            r.reraise()
        outputs.append(r)
    return outputs
