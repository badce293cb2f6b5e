"""``torch.linalg.ldl_factor``, ``ldl_factor_ex`` and ``ldl_solve``: the Bunch-Kaufman
factorization of symmetric (or Hermitian) indefinite matrices, in LAPACK sytrf's compact form, so
that factors and pivots are PyTorch's. Two kernel ops (``_linalg_ldl_factor_ex``,
``_linalg_ldl_solve``) with a host path (:mod:`ember.ops.linalg_host`, numpy) and no derivative, as
in PyTorch; the public functions are composites checking the arguments with PyTorch's messages.
"""
from __future__ import annotations

from .. import _dtype as D
from .. import return_types as RT
from . import _args as U
from . import linalg_host as H
from .declare import composite, defop
from .linalg_api import raise_info
from .linalg_factor import check_float, check_matrix, check_square, type_desc

__all__ = []


def _no_derivative(name):
    def bw(ctx, g):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")
    bw.__name__ = f"_{name}_bw"
    return bw


@defop("_linalg_ldl_factor_ex", backward=_no_derivative("linalg_ldl_factor_ex"), saves=(), out=False, method=False,
       group="linalg", host=H.ldl_factor_ex)
def ldl_factor_ex_k(A, hermitian=False):
    """``(LD, pivots, info)``: LAPACK sytrf's (hetrf's with ``hermitian``) compact factorization
    of the lower triangle of ``A``."""
    return A._device, (A, bool(hermitian)), (A,)


@defop("_linalg_ldl_solve", backward=_no_derivative("linalg_ldl_solve"), saves=(), out=False, method=False,
       group="linalg", host=H.ldl_solve)
def ldl_solve_k(LD, pivots, B, hermitian=False):
    """X with ``A X = B`` from A's ``ldl_factor``, batch dims broadcast."""
    return LD._device, (LD, pivots, B, bool(hermitian)), (LD, B)


@composite("linalg_ldl_factor_ex", method=False)
def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    """``(LD, pivots, info)``: ``A = P L D L^T P^T`` (``L^H`` with ``hermitian``) from the lower
    triangle of A, Bunch-Kaufman pivoting; info = the first zero diagonal of D (1-based) or 0."""
    op = "torch.linalg.ldl_factor_ex"
    check_square(op, A)
    check_float(op, A, "ldl_factor_kernel_cpu")
    LD, piv, info = ldl_factor_ex_k(A, hermitian)
    if check_errors:
        raise_info(op, info, _ldl_msg)
    return RT.linalg_ldl_factor_ex(LD, piv, info)


def _ldl_msg(v):
    return (f"The factorization could not be completed because the factor D is singular (its diagonal element {v} "
            "is zero).")


@composite("linalg_ldl_factor", method=False)
def ldl_factor(A, *, hermitian=False):
    """``(LD, pivots)``; LinAlgError where D is singular (PyTorch reports it as an internal error)."""
    LD, piv, info = ldl_factor_ex(A, hermitian=hermitian)  # its checks name ldl_factor_ex, as PyTorch's
    raise_info("torch.linalg.ldl_factor", info, _ldl_msg)
    return RT.linalg_ldl_factor(LD, piv)


@composite("linalg_ldl_solve", method=False)
def ldl_solve(LD, pivots, B, *, hermitian=False):
    """X with ``A X = B`` given A's ``ldl_factor`` ``(LD, pivots)``; B a (batch of) matrices."""
    op = "torch.linalg.ldl_solve"
    if B._dtype is not LD._dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {type_desc(B._dtype)} and "
                           f"A of type {type_desc(LD._dtype)} instead.")
    check_square(op, LD)
    check_matrix(op, B, "B")
    if pivots._shape != LD._shape[:-1]:
        raise RuntimeError(f"{op}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with shape "
                           f"{list(pivots._shape)} instead")
    if pivots._dtype.is_floating_point or pivots._dtype.is_complex or pivots._dtype is D.bool:
        raise RuntimeError(f"{op}: Expected pivots to be integers. Got {type_desc(pivots._dtype)}")
    n = LD._shape[-1]
    if B._shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for {op}: each A matrix is {n} by {n} but each b matrix is "
                           f"{B._shape[-2]} by {B._shape[-1]}")
    U.broadcast_shapes(LD._shape[:-2], B._shape[:-2], op)
    return ldl_solve_k(LD, pivots, B, hermitian)
