"""``ember.autograd.graph``: the graph's public names (``Node``, the base of every ``grad_fn``,
and the handle hooks return) and the saved-tensor hooks (``saved_tensors_hooks``,
``save_on_cpu``, ``disable_saved_tensors_hooks``). The graph itself is :mod:`ember._graph`."""
from __future__ import annotations

from .. import _state
from .._graph import Node, RemovableHandle

__all__ = ["Node", "RemovableHandle", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]

_grad = _state.grad


class saved_tensors_hooks:
    """Inside the block, every tensor an op saves for backward goes through ``pack_hook(tensor)``
    and the node keeps what it returns; backward gets the tensor back from ``unpack_hook(packed)``.
    Hooks nest (the innermost pair applies) and are per thread, as in PyTorch."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _grad.hooks_disabled is not None:
            raise RuntimeError(_grad.hooks_disabled)
        self._prev = _grad.saved_hooks
        _grad.saved_hooks = (self.pack_hook, self.unpack_hook)
        _state.count_saved_hooks(1)
        return self

    def __exit__(self, *exc):
        _grad.saved_hooks = self._prev
        _state.count_saved_hooks(-1)
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are moved to cpu in forward and back to their device in backward
    (``pin_memory`` pins the cpu copies where the tensor's backend can)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack_to_cpu(tensor):
            packed = tensor.cpu()
            if pin_memory and tensor.device.type != "cpu":
                packed = packed.pin_memory()
            return (tensor.device, packed)

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class disable_saved_tensors_hooks:
    """Inside the block, entering ``saved_tensors_hooks`` raises ``RuntimeError(error_message)``."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        self._prev = (_grad.hooks_disabled,)
        _grad.hooks_disabled = self.error_message
        return self

    def __exit__(self, *exc):
        _grad.hooks_disabled = self._prev[0]
        return False

    def __call__(self, fn):
        def wrapped(*args, **kwargs):
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*args, **kwargs)
        return wrapped
