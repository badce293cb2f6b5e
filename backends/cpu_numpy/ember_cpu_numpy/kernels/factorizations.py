"""The linear-algebra kernel ops on cpu: numpy.linalg through :mod:`ember.ops.linalg_host` (the
ops' own host functions, so that the kernels and the host path agree by construction), here
without the host path's copies: the tensors' numpy views go in, the results are wrapped. ``inv``
of matrices of order 16 and up runs LAPACK's getrf + getri per matrix instead (:mod:`.lapack`),
with the host function's values and ``info``."""
from __future__ import annotations

import functools

from ember.ops import linalg_host as H

from ..arrays import nd, wrap
from . import lapack

__all__ = ["KERNELS"]


def _kernel(fn):
    @functools.wraps(fn)  # the kernel takes the host function's arguments (its signature shows them)
    def k(*args):
        dev = next(a._device for a in args if hasattr(a, "_storage"))
        out = fn(*(nd(a) if hasattr(a, "_storage") else a for a in args))
        if isinstance(out, tuple):
            return tuple(wrap(o, dev) for o in out)
        return wrap(out, dev)
    return k


#: op name -> kernel (numpy only; ember-cuda-cupy does not inherit these: it takes the host path)
KERNELS = {"_linalg_cholesky_ex": _kernel(H.cholesky_ex), "_linalg_qr": _kernel(H.qr),
           "_linalg_eigh": _kernel(H.eigh), "_linalg_eig": _kernel(H.eig),
           "_linalg_svd": _kernel(H.svd), "_linalg_lu_factor_ex": _kernel(H.lu_factor_ex),
           "_linalg_solve_triangular": _kernel(H.solve_triangular), "_linalg_inv_ex": _kernel(lapack.inv_ex),
           "_linalg_solve_ex": _kernel(H.solve_ex), "_linalg_det": _kernel(H.det),
           "_linalg_slogdet": _kernel(H.slogdet), "_linalg_ldl_factor_ex": _kernel(H.ldl_factor_ex),
           "_linalg_ldl_solve": _kernel(H.ldl_solve)}
