"""Linear algebra: matmul (all rank combinations, batch broadcasting) and what is built on it."""
from __future__ import annotations

import math
import re

from .. import _dtype as D
from .._tensor import Tensor
from . import _args as U
from . import creation as CR
from . import linalg_api as LAPI
from . import shape as SH
from ._binary import saves_other
from .declare import composite, defop

__all__ = ["addbmm", "addbmm_", "addmm", "addmm_", "addmv", "addmv_", "addr", "addr_", "baddbmm", "baddbmm_", "bmm",
           "chain_matmul", "cross", "diag", "diag_embed", "diagflat", "dot", "einsum", "ger", "inner", "kron",
           "matmul", "matrix_power", "mm", "mv", "outer", "tensordot", "trace", "vdot"]


def _matmul_bw(ctx, g):
    a, b = ctx.args
    na, nb = a.dim(), b.dim()
    ga = gb = None
    if na == 1 and nb == 1:
        return (g * b if ctx.needs_input_grad[0] else None, g * a if ctx.needs_input_grad[1] else None)
    if na == 1:
        if ctx.needs_input_grad[0]:
            ga = matmul(g.unsqueeze(-2), b.mT).squeeze(-2)
        if ctx.needs_input_grad[1]:
            gb = a.unsqueeze(-1) * g.unsqueeze(-2) if g.dim() == 1 else matmul(a.unsqueeze(-1), g.unsqueeze(-2))
        return (ga, gb)
    if nb == 1:
        if ctx.needs_input_grad[0]:
            ga = g.unsqueeze(-1) * b
        if ctx.needs_input_grad[1]:
            gb = matmul(a.mT, g.unsqueeze(-1)).squeeze(-1)
        return (ga, gb)
    if ctx.needs_input_grad[0]:
        ga = matmul(g, b.mT)
    if ctx.needs_input_grad[1]:
        gb = matmul(a.mT, g)
    return (ga, gb)


def _check_mm_dtypes(a, b, op):
    if a._dtype is not b._dtype:
        raise RuntimeError(f"{op}: expected m1 and m2 to have the same dtype, but got: "
                           f"{a._dtype.name} != {b._dtype.name}")
    if a._dtype is D.bool:
        raise U.dtype_not_implemented("addmm_impl_cpu_", a._dtype, f"{op} of {U.desc(a)} and {U.desc(b)}")


@defop("matmul", backward=U.holomorphic(_matmul_bw), saves=saves_other, group="linalg")
def matmul(input, other):
    """Matrix product with numpy's rules: 1-D operands are promoted, batch dims broadcast."""
    a = U.tensor_arg(input, "matmul")
    b = U.tensor_arg(other, "matmul")
    na, nb = len(a._shape), len(b._shape)
    if na == 0 or nb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D")
    dev = a._device if a._device is b._device else U.common_device("matmul", a, b)
    if a._dtype is not b._dtype or a._dtype is D.bool:
        _check_mm_dtypes(a, b, "matmul")
    ka = a._shape[-1]
    kb = b._shape[-2] if nb > 1 else b._shape[0]
    if ka != kb:
        if na <= 2 and nb <= 2:
            sa = "x".join(str(s) for s in (a._shape if na == 2 else (1,) + a._shape))
            sb = "x".join(str(s) for s in (b._shape if nb == 2 else b._shape + (1,)))
            if na == 1 and nb == 1:
                raise RuntimeError(f"inconsistent tensor size, expected tensor [{ka}] and src [{kb}] to have the same "
                                   f"number of elements, but got {ka} and {kb} elements respectively")
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
        raise RuntimeError(f"matmul: Expected size for first two dimensions of batch2 tensor to be: [{ka}] but got: "
                           f"[{kb}] (shapes {list(a._shape)} and {list(b._shape)})")
    if na > 2 or nb > 2:
        U.broadcast_shapes(a._shape[:-2] if na > 1 else (), b._shape[:-2] if nb > 1 else (), "matmul")
    t = (a, b)
    return dev, t, t


@composite("mm")
def mm(input, mat2):
    """Product of two matrices."""
    if input.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"mm: {'self' if input.dim() != 2 else 'mat2'} must be a matrix "
                           f"(shapes {list(input._shape)} and {list(mat2._shape)})")
    return matmul(input, mat2)


@composite("bmm")
def bmm(input, mat2):
    """Batched product of two 3-D tensors with equal batch sizes."""
    if input.dim() != 3 or mat2.dim() != 3:
        raise RuntimeError(f"bmm: batch1 and batch2 must be 3D tensors (got {input.dim()}D and {mat2.dim()}D)")
    if input._shape[0] != mat2._shape[0]:
        raise RuntimeError("bmm: batch1 and batch2 must have the same batch size, "
                           f"got {input._shape[0]} and {mat2._shape[0]}")
    return matmul(input, mat2)


@composite("mv")
def mv(input, vec):
    """Matrix-vector product."""
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, {vec.dim()}")
    return matmul(input, vec)


def _check_dot(input, other):
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors")
    if input._dtype is not other._dtype:
        raise RuntimeError("dot : expected both vectors to have same dtype, but found "
                           f"{U.type_name(input._dtype)} and {U.type_name(other._dtype)}")


@composite("dot")
def dot(input, other):
    """Inner product of two 1-D tensors (no conjugation: see ``vdot``)."""
    _check_dot(input, other)
    return matmul(input, other)


@composite("vdot")
def vdot(input, other):
    """``sum(conj(input) * other)`` of two 1-D tensors: ``dot`` conjugating the first."""
    _check_dot(input, other)
    return matmul(input.conj(), other)


@composite("inner")
def inner(input, other):
    """Sum of products over the last dims of both."""
    if input.dim() == 0 or other.dim() == 0:
        r = input * other
    elif other.dim() <= 2:
        r = matmul(input, other.mT if other.dim() > 1 else other)
    else:
        r = tensordot(input, other, ([-1], [-1]))
    return r


@composite("outer")
def outer(input, vec2):
    """Outer product of two vectors."""
    if input.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(f"outer: expected 1-D tensors, got {input.dim()}D and {vec2.dim()}D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = outer


def _coef(v, dtype, op):
    """``alpha``/``beta`` converted to ``dtype``, as PyTorch converts them to the tensors' scalar
    type: a float is truncated for an integer dtype if the dtype holds it, else RuntimeError."""
    if dtype.category >= D._FLOAT:
        return v
    if dtype is D.bool:
        return bool(v)
    if isinstance(v, float):
        return U.float_to_int(v, dtype, op)
    return U.int_in_range(int(v), dtype, op)


def _same_dtypes(op, input, a, b):
    if not (input._dtype is a._dtype is b._dtype):
        raise RuntimeError(f"{op}: input tensors must have the same dtype, but got {input._dtype.name}, "
                           f"{a._dtype.name} and {b._dtype.name} (shapes {list(input._shape)}, {list(a._shape)} and "
                           f"{list(b._shape)})")


def _add_scaled(op, input, p, beta, alpha):
    """``beta * input + alpha * p`` in ``p``'s dtype; with ``beta == 0`` the values of ``input``
    are ignored (NaN does not spread) but its shape must still expand to ``p``'s."""
    beta, alpha = _coef(beta, p._dtype, op), _coef(alpha, p._dtype, op)
    x = input.expand(p._shape)
    if alpha != 1:
        p = p & alpha if p._dtype is D.bool else p * alpha
    if beta == 0:
        if x._requires_grad:  # differentiable with a zero gradient, as in PyTorch (NaN does not spread)
            p = x.where(CR.zeros(p._shape, dtype=D.bool, device=p._device), p)
        return p
    if beta != 1:
        x = x & beta if x._dtype is D.bool else x * beta
    return p | x if p._dtype is D.bool else p + x


@composite("addmm", inplace=True)
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``, all three of one dtype."""
    _same_dtypes("addmm", input, mat1, mat2)
    return _add_scaled("addmm", input, mm(mat1, mat2), beta, alpha)


@composite("addmv", inplace=True)
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``, all three of one dtype; ``input`` is 0-D or 1-D."""
    if input.dim() > 1 or mat.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, {mat.dim()}, {vec.dim()}")
    if mat._shape[1] != vec._shape[0] or input.numel() not in (1, mat._shape[0]):
        raise RuntimeError(f"addmv: size mismatch, got input {list(input._shape)}, mat ({mat._shape[0]}x"
                           f"{mat._shape[1]}), vec ({vec._shape[0]})")
    _same_dtypes("addmv", input, mat, vec)
    return _add_scaled("addmv", input, mv(mat, vec), beta, alpha)


@composite("addr", inplace=True)
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)``, computed in the promoted dtype of the three
    (an integer or bool result refuses a float ``alpha``/``beta``)."""
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.dim() != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.dim()}-D")
    dt = D.result_type(input, vec1, vec2)
    if dt.category < D._FLOAT:
        for name, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, float):
                raise RuntimeError(f"addr: For integral input tensors, argument {name} must not be a floating point "
                                   f"number (got {v}, dtypes {input._dtype.name}, {vec1._dtype.name}, "
                                   f"{vec2._dtype.name})")
    p = vec1.to(dt).unsqueeze(1)
    p = p & vec2.to(dt).unsqueeze(0) if dt is D.bool else p * vec2.to(dt).unsqueeze(0)
    return _add_scaled("addr", input.to(dt), p, beta, alpha)


@composite("baddbmm", inplace=True)
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * (batch1 @ batch2)``, all three of one dtype."""
    _same_dtypes("baddbmm", input, batch1, batch2)
    return _add_scaled("baddbmm", input, bmm(batch1, batch2), beta, alpha)


@composite("addbmm", inplace=True)
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``, all three of one dtype."""
    _same_dtypes("addbmm", input, batch1, batch2)
    return _add_scaled("addbmm", input, bmm(batch1, batch2).sum(0, dtype=batch1._dtype), beta, alpha)


addmm_, addmv_, addr_, baddbmm_, addbmm_ = addmm.inplace, addmv.inplace, addr.inplace, baddbmm.inplace, addbmm.inplace


@composite("matrix_power", out=False)
def matrix_power(input, n: int):
    """``input`` (a square matrix or a batch of them) multiplied by itself ``n`` times (a negative
    ``n``: its inverse, ``n`` times)."""
    if input.dim() < 2 or input._shape[-1] != input._shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{' by '.join(str(s) for s in input._shape[-2:])} matrices ({U.desc(input)})")
    if n < 0:
        return matrix_power(LAPI.inv(input), -n)
    if n == 0:
        eye = CR.eye(input._shape[-1], dtype=input._dtype, device=input._device)
        # selected over the input, so that it is differentiable (a zero gradient), as in PyTorch
        keep = CR.ones(input._shape, dtype=D.bool, device=input._device)
        return eye.expand(input._shape).where(keep, input)
    if n == 3:
        return matmul(matmul(input, input), input)  # PyTorch's order (it matters for inf and rounding)
    result, base = None, input
    while n:  # square-and-multiply
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result if result is not input else input.clone()


@composite("chain_matmul", method=False)
def chain_matmul(*matrices):
    """The product of 2-D matrices, left to right (deprecated in PyTorch: use ``linalg.multi_dot``)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    r = matrices[0]
    for m in matrices[1:]:
        r = mm(r, m)
    return r.clone() if len(matrices) == 1 else r


@composite("tensordot", method=False)
def tensordot(a, b, dims=2):
    """Contract ``dims`` (an int: the last of a with the first of b; or two lists) of a and b."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da = list(range(a.dim() - dims, a.dim()))
        db = list(range(dims))
    elif isinstance(dims, Tensor):
        return tensordot(a, b, dims.tolist())
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
    da = [U.wrap_dim(d, a.dim(), "tensordot") for d in da]
    db = [U.wrap_dim(d, b.dim(), "tensordot") for d in db]
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    for x, y in zip(da, db):
        if a._shape[x] != b._shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a._shape[x]} in dim {x} and "
                               f"second has size {b._shape[y]} in dim {y}")
    fa = [d for d in range(a.dim()) if d not in da]
    fb = [d for d in range(b.dim()) if d not in db]
    k = math.prod(a._shape[d] for d in da)
    ma = math.prod(a._shape[d] for d in fa)
    nb = math.prod(b._shape[d] for d in fb)
    lhs = a.permute(fa + da).reshape(ma, k)
    rhs = b.permute(db + fb).reshape(k, nb)
    return mm(lhs, rhs).reshape([a._shape[d] for d in fa] + [b._shape[d] for d in fb])


@composite("kron")
def kron(input, other):
    """Kronecker product."""
    nd = max(input.dim(), other.dim())
    a = input.reshape((1,) * (nd - input.dim()) + input._shape)
    b = other.reshape((1,) * (nd - other.dim()) + other._shape)
    ai = []
    bi = []
    for i in range(nd):
        ai += [a._shape[i], 1]
        bi += [1, b._shape[i]]
    r = a.reshape(ai) * b.reshape(bi)
    return r.reshape([a._shape[i] * b._shape[i] for i in range(nd)])


@composite("trace", out=False)
def trace(input):
    """Sum of the main diagonal of a matrix."""
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    return input.diagonal().sum()


@composite("diag")
def diag(input, diagonal: int = 0):
    """A 1-D tensor's square diagonal matrix, or a matrix's ``diagonal``-th diagonal."""
    if input.dim() == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.dim() == 2:
        return input.diagonal(diagonal).clone()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")


@composite("diag_embed", out=False)
def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """Tensors whose (dim1, dim2) diagonals are the last dimension of ``input``."""
    n = input._shape[-1] + abs(offset)
    nd = input.dim() + 1
    d1 = U.wrap_dim(dim1, nd, "diag_embed")
    d2 = U.wrap_dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    batch = list(input._shape[:-1])
    shape = []
    bi = iter(batch)
    for i in range(nd):
        shape.append(n if i in (d1, d2) else next(bi))
    z = CR.zeros(shape, dtype=input._dtype, device=input._device)
    z.diagonal(offset, d1, d2).copy_(input)
    return z


@composite("diagflat", out=False)
def diagflat(input, offset=0):
    """The flattened ``input`` as the ``offset``-th diagonal of a square matrix."""
    return diag(input.reshape(-1), offset)


_EIN = re.compile(r"^[a-zA-Z.]*$")


@composite("einsum", out=False, method=False)
def einsum(equation: str, *operands):
    """Einstein summation, contracted pairwise with matmul (``'ij,jk->ik'``, ``'...ij->...ji'``)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation "
                           f"({len(operands)} vs {len(terms)})")
    # expand ellipses into fresh capital-free letters
    letters = [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    used = set(eq)
    free = [c for c in letters if c not in used]
    ell_n = 0
    for t, x in zip(terms, operands):
        if "..." in t:
            ell_n = max(ell_n, x.dim() - (len(t) - 3))
    ell = "".join(free[:ell_n])
    subs = []
    for t, x in zip(terms, operands):
        if "..." in t:
            k = x.dim() - (len(t) - 3)
            t = t.replace("...", ell[ell_n - k:])
        if len(t) != x.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) does not match the "
                               f"number of dimensions ({x.dim()}) for operand {len(subs)}")
        subs.append(t)
    if rhs is None:
        counts = {}
        for t in subs:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", ell)
    ops = list(operands)
    # take repeated subscripts within one operand (diagonals) and sum indices used nowhere else
    for i in range(len(ops)):
        ops[i], subs[i] = _einsum_diag(ops[i], subs[i])
    sizes = {}
    for t, x in zip(subs, ops):
        for c, s in zip(t, x._shape):
            if c in sizes and sizes[c] != s and s != 1 and sizes[c] != 1:
                raise RuntimeError("einsum(): operands do not broadcast with remapped shapes "
                                   f"(subscript {c}: {sizes[c]} vs {s})")
            sizes[c] = max(sizes.get(c, 1), s)
    while len(ops) > 1:
        a, sa = ops.pop(0), subs.pop(0)
        b, sb = ops.pop(0), subs.pop(0)
        rest = "".join(subs) + rhs
        a, sa = _einsum_sum_unused(a, sa, sb + rest)
        b, sb = _einsum_sum_unused(b, sb, sa + rest)
        r, sr = _einsum_pair(a, sa, b, sb, rest)
        ops.insert(0, r)
        subs.insert(0, sr)
    x, s = ops[0], subs[0]
    x, s = _einsum_sum_unused(x, s, rhs)
    if sorted(s) != sorted(rhs):
        missing = set(rhs) - set(s)
        if missing:
            raise RuntimeError(f"einsum(): output subscript {sorted(missing)[0]} does not appear in the equation "
                               "for any input operand")
    return x.permute([s.index(c) for c in rhs]) if s != rhs else x


def _einsum_diag(x, s):
    while True:
        dup = next((c for c in s if s.count(c) > 1), None)
        if dup is None:
            return x, s
        i = s.index(dup)
        j = s.index(dup, i + 1)
        x = x.diagonal(0, i, j)
        s = s[:i] + s[i + 1:j] + s[j + 1:] + dup


def _einsum_sum_unused(x, s, others):
    dims = [i for i, c in enumerate(s) if c not in others]
    if not dims:
        return x, s
    x = x.sum(dims)
    return x, "".join(c for c in s if c in others)


def _einsum_pair(a, sa, b, sb, rest):
    batch = [c for c in sa if c in sb and c in rest]
    contract = [c for c in sa if c in sb and c not in rest]
    fa = [c for c in sa if c not in sb]
    fb = [c for c in sb if c not in sa]
    A = a.permute([sa.index(c) for c in batch + fa + contract])
    B = b.permute([sb.index(c) for c in batch + contract + fb])
    nbatch = len(batch)
    if not contract:
        # nothing summed: a broadcast product (with type promotion, as PyTorch's einsum)
        A = A.reshape(list(A._shape) + [1] * len(fb))
        B = B.reshape(list(B._shape[:nbatch]) + [1] * len(fa) + list(B._shape[nbatch:]))
        return A * B, "".join(batch + fa + fb)
    bs = [max(A._shape[i], B._shape[i]) for i in range(nbatch)]
    fas = list(A._shape[nbatch:nbatch + len(fa)])
    fbs = list(B._shape[nbatch + len(contract):])
    k = 1
    for i in range(len(contract)):
        k *= max(A._shape[nbatch + len(fa) + i], B._shape[nbatch + i])
    A = A.reshape(list(A._shape[:nbatch]) + [math.prod(fas), math.prod(A._shape[nbatch + len(fa):])])
    B = B.reshape(list(B._shape[:nbatch]) + [math.prod(B._shape[nbatch:nbatch + len(contract)]), math.prod(fbs)])
    if A._shape[-1] != B._shape[-2]:
        # a contracted size broadcast from 1
        if A._shape[-1] == 1:
            A = A.expand(list(A._shape[:-1]) + [k])
        if B._shape[-2] == 1:
            B = B.expand(list(B._shape[:-2]) + [k, B._shape[-1]])
    r = matmul(A, B)
    r = r.reshape(bs + fas + fbs)
    return r, "".join(batch + fa + fb)


@composite("cross")
def cross(input, other, dim=None):
    """Cross product of 3-vectors along ``dim`` (the first dim of size 3 by default); the
    operands broadcast."""
    shape = U.broadcast_shapes(input._shape, other._shape, "cross")
    if dim is None:
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError(f"cross: no dimension of size 3 in input (shapes {list(input._shape)} and "
                               f"{list(other._shape)})")
    d = U.wrap_dim(dim, len(shape), "cross")

    def size_at(t):
        k = d - (len(shape) - t.dim())
        return t._shape[k] if k >= 0 else 1
    if size_at(input) != 3 or size_at(other) != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {d} must have length 3. Got {size_at(input)} and "
                           f"{size_at(other)}")
    a0, a1, a2 = input.expand(shape).unbind(d)
    b0, b1, b2 = other.expand(shape).unbind(d)
    return SH.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)
