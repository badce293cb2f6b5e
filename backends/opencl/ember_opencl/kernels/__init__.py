"""The opencl kernel table: op name -> launcher, assembled from one module per kind of op."""
from . import conv, index, matmul, memory, norm, optim, pointwise, pool, random, reduce, scan, sort

KERNELS: dict = {}
for _m in (memory, pointwise, reduce, scan, matmul, index, sort, random, conv, pool, norm, optim):
    KERNELS.update(_m.KERNELS)

OUT_KERNELS = frozenset(pointwise.OUT)
