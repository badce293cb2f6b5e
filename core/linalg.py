"""``ember.linalg``: PyTorch's ``torch.linalg`` namespace (docs/linalg.md).

The factorizations and solvers are kernel ops (:mod:`ember.ops.linalg_factor`) that a backend
may implement; a backend without them computes them on the host with numpy (copies to and from
the device, reported as "host" in the conformance suite's coverage table). Everything else is
written over them (:mod:`ember.ops.linalg_api`, :mod:`ember.ops.linalg_more`).
"""
from __future__ import annotations

from .ops import linalg as _LA
from .ops import linalg_api as _API
from .ops import linalg_ldl as _LDL
from .ops import linalg_more as _MORE
from .ops.linalg_factor import LinAlgError

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
           "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq",
           "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular",
           "svd", "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]

cholesky = _API.linalg_cholesky
cholesky_ex = _API.cholesky_ex
inv = _API.inv
inv_ex = _API.inv_ex
solve = _API.solve
solve_ex = _API.solve_ex
solve_triangular = _API.solve_triangular
det = _API.linalg_det
slogdet = _API.linalg_slogdet
qr = _API.linalg_qr
eig = _API.eig
eigvals = _API.eigvals
eigh = _API.eigh
eigvalsh = _API.eigvalsh
svd = _API.linalg_svd
svdvals = _API.svdvals
lu = _API.lu
lu_factor = _API.lu_factor
lu_factor_ex = _API.lu_factor_ex
lu_solve = _API.lu_solve
ldl_factor = _LDL.ldl_factor
ldl_factor_ex = _LDL.ldl_factor_ex
ldl_solve = _LDL.ldl_solve

norm = _MORE.norm
vector_norm = _MORE.vector_norm
matrix_norm = _MORE.matrix_norm
cond = _MORE.cond
matrix_rank = _MORE.matrix_rank
pinv = _MORE.pinv
lstsq = _MORE.lstsq
matrix_exp = _MORE.matrix_exp
matrix_power = _MORE.matrix_power
cross = _MORE.cross
vecdot = _MORE.vecdot
multi_dot = _MORE.multi_dot
householder_product = _MORE.householder_product
vander = _MORE.vander
diagonal = _MORE.diagonal
tensorinv = _MORE.tensorinv
tensorsolve = _MORE.tensorsolve
matmul = _LA.matmul
