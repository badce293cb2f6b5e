"""The opencl kernel table: op name -> launcher, assembled from one module per kind of op.

Kernel modules: memory (copies, fill, cat), pointwise (unary, binary, where; their C expressions
in ops), reduce, scan, sort, matmul (and linear), index (gather, scatter_add, index_select,
nonzero), random (Philox), conv (im2col/col2im and the convolution family), pool (max pool), norm
(softmax, batch norm), optim (fused SGD/Adam). What they share: args (the named argument struct
of a kernel), layout (shape geometry and the C that walks it), tensors (new tensors, views, 1-D
launches), types (the C view of each dtype) and elementwise (the generator behind every
elementwise kernel).
"""
from . import conv, index, matmul, memory, norm, optim, pointwise, pool, random, reduce, scan, sort

KERNELS: dict = {}
for _m in (memory, pointwise, reduce, scan, matmul, index, sort, random, conv, pool, norm, optim):
    KERNELS.update(_m.KERNELS)

OUT_KERNELS = frozenset(pointwise.OUT)
