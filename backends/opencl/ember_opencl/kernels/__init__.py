"""The opencl kernel table: op name -> launcher, assembled from one module per kind of op.

Kernel modules: memory (copies, fill, cat), pointwise (unary, binary, where; their C expressions
in ops, and in cplx for complex types), reduce, scan, sort, matmul (and linear), index (gather,
scatter_add, index_select, nonzero), random (Philox), conv (im2col/col2im and the convolution
family), pool (max pool), norm (softmax, batch norm), optim (fused SGD/Adam). What they share:
args (the named argument struct of a kernel), layout (shape geometry and the C that walks it),
tensors (new tensors, views, 1-D launches), types (the C view of each dtype), cplx (complex
arithmetic in OpenCL C) and elementwise (the generator behind every elementwise kernel).
"""
from ember.backend import Tensor
from ember.ops import OPS

from . import conv, index, matmul, memory, norm, optim, pointwise, pool, random, reduce, scan, sort

KERNELS: dict = {}
for _m in (memory, pointwise, reduce, scan, matmul, index, sort, random, conv, pool, norm, optim):
    KERNELS.update(_m.KERNELS)

OUT_KERNELS = frozenset(pointwise.OUT)


def _real_only(name: str, kernel):
    """``kernel`` (a fast path written for real dtypes) that hands complex tensors to the op's
    decomposition: the same arguments and results, so autograd and values agree with the core."""
    decomp = OPS[name].decomposition

    def k(*args, **kw):
        for a in args:
            if isinstance(a, Tensor) and a._dtype.is_complex:
                return decomp(*args, **kw)
        return kernel(*args, **kw)
    k.__name__ = getattr(kernel, "__name__", name)
    return k


for _m in (conv, pool, norm):
    for _name in _m.KERNELS:
        KERNELS[_name] = _real_only(_name, KERNELS[_name])
