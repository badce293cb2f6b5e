"""``nn.DataParallel``: one process, several devices of one backend; each forward splits the
batch over the devices, runs a replica of the module on each (threads), and joins the outputs."""
from __future__ import annotations

from typing import Any, Sequence

from ..modules.module import Module
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter_kwargs
from ..._device import device
from ... import _plugins


def _device_of(module: Module):
    for t in module.parameters():
        return t.device
    for t in module.buffers():
        return t.device
    return None


def _as_device(d, device_type: str):
    if hasattr(d, "type"):
        return d
    if isinstance(d, int):
        return device(device_type, d)
    return device(d)


class DataParallel(Module):
    """Split each batch along ``dim`` over ``device_ids`` (default: every device of the module's
    device type), run a replica of ``module`` on each device in parallel, and gather the outputs
    on ``output_device`` (default ``device_ids[0]``). Gradients flow back into ``module``'s own
    parameters, which must live on ``device_ids[0]``. With one device it just calls ``module``.

    >>> model = nn.DataParallel(Net().to("opencl:0"), device_ids=[0, 1])
    >>> model(x).sum().backward()           # Net's parameters get the whole batch's gradient
    """

    def __init__(self, module: Module, device_ids: Sequence | None = None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: module must be an ember.nn.Module, got {type(module).__name__}")
        self.module = module
        self.dim = dim
        home = _device_of(module)
        dev_type = home.type if home is not None else "cpu"
        if device_ids is None:
            try:
                count = _plugins.backend_for(dev_type).device_count()
            except RuntimeError:
                count = 1
            device_ids = list(range(max(count, 1))) if dev_type != "cpu" else [home or "cpu"]
        if len(device_ids) == 0:
            raise ValueError("DataParallel: device_ids must not be empty")
        self.device_ids = [_as_device(d, dev_type) for d in device_ids]
        if len({d.type for d in self.device_ids}) > 1:
            raise ValueError(f"DataParallel: device_ids must be devices of one type, got {self.device_ids}")
        self.output_device = _as_device(output_device, dev_type) if output_device is not None else self.device_ids[0]
        self.src_device_obj = self.device_ids[0]

    def _check_home(self) -> None:
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device {self.src_device_obj} "
                                   f"(device_ids[0]) but found one of them on device: {t.device}")

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if len(self.device_ids) == 1:
            return self.module(*inputs, **kwargs)  # one device: nothing to split
        self._check_home()
        inputs, kwargs = scatter_kwargs(inputs, kwargs, self.device_ids, self.dim)
        if not inputs and not kwargs:
            inputs, kwargs = ((),), ({},)
        if len(inputs) == 1:
            return gather([self.module(*inputs[0], **kwargs[0])], self.output_device, self.dim)
        replicas = replicate(self.module, self.device_ids[:len(inputs)])
        outputs = parallel_apply(replicas, inputs, kwargs, self.device_ids[:len(replicas)])
        return gather(outputs, self.output_device, self.dim)

    def extra_repr(self) -> str:
        return f"device_ids={[str(d) for d in self.device_ids]}, output_device={self.output_device}, dim={self.dim}"


def data_parallel(module: Module, inputs: Any, device_ids: Sequence | None = None, output_device=None, dim: int = 0,
                  module_kwargs: dict | None = None) -> Any:
    """The functional form of :class:`DataParallel` (one forward)."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    dp = DataParallel(module, device_ids, output_device, dim)
    return dp(*inputs, **(module_kwargs or {}))


