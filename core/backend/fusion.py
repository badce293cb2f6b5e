"""The elementwise chain a compiled program offers a backend to fuse (``Backend.fuse_elementwise``).

``ember.compile`` finds chains of elementwise kernel calls in a recording: each op one of
:data:`FUSIBLE`, every tensor operand of one floating dtype (float32 or float16: float64 chains are
never offered, so compiled float64 results stay identical to eager ones) and one device, each
intermediate result used only by the next ops of the chain (never returned, viewed, or written).
It asks the backend of the chain's device once, at capture: ``fuse_elementwise(chain)`` returns a
callable ``fused(*inputs) -> Tensor`` computing the chain's last result from its
:attr:`ElementwiseChain.inputs`, or None to decline (the calls then replay one by one).

The fused result must equal what the kernels give one by one within the dtype's rounding (a fused
kernel may keep intermediates in registers at higher precision, as PyTorch's fused kernels do),
have the last op's shape (the broadcast of the inputs' shapes) and dtype, and be a new tensor
(``make_tensor``); the inputs may be any strided views and are not modified.
"""
from __future__ import annotations

__all__ = ["ElementwiseChain", "FUSIBLE"]

#: the kernels a chain may hold, with their arity: the unary and binary primitives of float math
#: and the common activations. Binary ops may take one python number operand.
FUSIBLE = {
    "neg": 1, "abs": 1, "exp": 1, "log": 1, "sin": 1, "cos": 1, "tanh": 1, "sqrt": 1, "relu": 1, "sigmoid": 1,
    "add": 2, "sub": 2, "mul": 2, "div": 2, "maximum": 2, "minimum": 2,
}


class ElementwiseChain:
    """One chain. ``ops``: ``(name, args)`` in order, each argument ``("in", i)`` (the chain's input
    ``i``), ``("op", j)`` (the result of op ``j`` of the chain) or a python number; ``inputs``:
    ``(shape, dtype)`` of each input tensor; ``shape`` and ``dtype`` of the result (the last op's);
    ``device`` the canonical device."""

    __slots__ = ("ops", "inputs", "shape", "dtype", "device")

    def __init__(self, ops, inputs, shape, dtype, device):
        self.ops = ops
        self.inputs = inputs
        self.shape = shape
        self.dtype = dtype
        self.device = device

    def __repr__(self):
        return f"<ElementwiseChain {'->'.join(n for n, _ in self.ops)} {self.shape} {self.dtype}>"
