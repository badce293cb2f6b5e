"""The converter tables: op name -> function writing the op's ONNX nodes.

``CONVERTERS[name](g, args, out)`` converts a kernel op from its kernel arguments (the plan its
meta made: promoted dtypes, wrapped dims, python numbers) and its result(s), binding each result
it maps (``g.bind``). ``VIEWS[name](g, x, v, args)`` converts a view op (``args`` is the view's
``ctx.args``). This module holds the tensor ops (the primitives and the common kernel ops); the
nn layers are in :mod:`ember.onnx._nn`, the views in :mod:`ember.onnx._views`. An op listed in
neither is converted through its decomposition where it has one (see :mod:`ember.onnx._trace`).
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from . import _nn
from . import _views
from ._graph import Graph
from .errors import UnsupportedOperatorError

__all__: list = []


def onnx_type(g: Graph, dtype) -> int:
    """The TensorProto element type of an ember dtype."""
    return g.onnx.helper.np_dtype_to_tensor_dtype(dtype.np)


def operand(g: Graph, v, other, out) -> str:
    """A tensor argument's value, or a python number as a constant of the other operand's dtype."""
    if isinstance(v, Tensor):
        return g.inp(v)
    like = other if isinstance(other, Tensor) else (out[0] if isinstance(out, tuple) else out)
    return g.scalar(v, like._dtype.np)


def unary(op_type: str):
    def conv(g, args, out):
        x = g.inp(args[0])
        g.bind(out, g.node(op_type, [x]), [x])
    return conv


def chain(*op_types: str):
    def conv(g, args, out):
        v = x = g.inp(args[0])
        for t in op_types:
            v = g.node(t, [v])
        g.bind(out, v, [x])
    return conv


def binary(op_type: str, negate: bool = False, **attrs):
    def conv(g, args, out):
        a, b = args
        na, nb = operand(g, a, b, out), operand(g, b, a, out)
        r = g.node(op_type, [na, nb], **attrs)
        if negate:
            r = g.node("Not", [r])
        g.bind(out, r, [na, nb])
    return conv


def _trunc(g, args, out):
    x = g.inp(args[0])
    neg = g.node("Less", [x, g.scalar(0, args[0]._dtype.np)])
    g.bind(out, g.node("Where", [neg, g.node("Ceil", [x]), g.node("Floor", [x])]), [x])


def _square(g, args, out):
    x = g.inp(args[0])
    g.bind(out, g.node("Mul", [x, x]), [x])


def _where(g, args, out):
    c, a, b = args
    na, nb = operand(g, a, b, out), operand(g, b, a, out)
    nc = g.inp(c)
    g.bind(out, g.node("Where", [nc, na, nb]), [nc, na, nb])


def _clamp(g, args, out):
    x, lo, hi = args
    nx = g.inp(x)
    ins = [nx] + ["" if v is None else operand(g, v, x, out) for v in (lo, hi)]
    while ins[-1] == "":
        ins.pop()
    g.bind(out, g.node("Clip", ins), [nx])


# -- reductions -------------------------------------------------------------------------------

def _axes(dims, rank):
    dims = tuple(range(rank)) if dims is None or dims == () else tuple(dims)
    return [d % rank if rank else 0 for d in dims]


def reduce(g: Graph, op_type: str, x: Tensor, dims, keepdim: bool) -> str:
    """``op_type`` (ReduceSum, ReduceMean...) of ``x`` over ``dims`` (None or () is every dim)."""
    nx = g.inp(x)
    if x.dim() == 0:
        return g.node("Identity", [nx])
    axes = _axes(dims, x.dim())
    if op_type == "ReduceSum" or g.opset >= 18:
        return g.node(op_type, [nx, g.ints(axes, "axes")], keepdims=int(bool(keepdim)))
    return g.node(op_type, [nx], axes=axes, keepdims=int(bool(keepdim)))


def reduction(op_type: str):
    def conv(g, args, out):
        x, dims, keepdim = args[0], args[1], args[-1]
        r = reduce(g, op_type, x, dims, keepdim)
        sym = g.sym.get(g.inp(x))
        osym = None
        if sym:
            axes = set(_axes(dims, x.dim()))
            osym = [None if i in axes else e for i, e in enumerate(sym) if keepdim or i not in axes]
        g.bind(out, r, sym=osym)
    return conv


def _arg(op_type: str):
    def conv(g, args, out):
        x, dim, keepdim = args
        nx = g.inp(x)
        if dim is None:
            nx = g.node("Reshape", [nx, g.ints([-1], "shape")])
            r = g.node(op_type, [nx], axis=0, keepdims=0)
            if keepdim:
                r = g.node("Reshape", [r, g.ints([1] * x.dim(), "shape")])
        else:
            r = g.node(op_type, [nx], axis=dim % max(x.dim(), 1), keepdims=int(bool(keepdim)))
        g.bind(out, r, [nx])
    return conv


def _max_dim(op_type: str, arg_type: str):
    def conv(g, args, out):
        x, d, keepdim = args
        nx = g.inp(x)
        d = d % max(x.dim(), 1)
        g.bind(out[0], reduce(g, op_type, x, (d,), keepdim), [nx])
        g.bind(out[1], g.node(arg_type, [nx], axis=d, keepdims=int(bool(keepdim))), [nx])
    return conv


def _var(op_type: str):
    def conv(g, args, out):
        x, dims, correction, keepdim = args
        nx = g.inp(x)
        m = reduce(g, "ReduceMean", x, dims, True)
        d = g.node("Sub", [nx, m])
        n = 1
        for a in _axes(dims, x.dim()):
            n *= x._shape[a]
        s = g.node("ReduceSum", [g.node("Mul", [d, d]), g.ints(_axes(dims, x.dim()), "axes")],
                   keepdims=int(bool(keepdim)))
        r = g.node("Div", [s, g.scalar(max(n - (correction or 0), 0), x._dtype.np)])
        if op_type == "std":
            r = g.node("Sqrt", [r])
        g.bind(out, r, [nx])
    return conv


def _cumsum(g, args, out):
    x, d = args[0], args[1]
    nx = g.inp(x)
    g.bind(out, g.node("CumSum", [nx, g.array(np.asarray(d, dtype=np.int64), "axis")]), [nx])


# -- memory: copies and casts ------------------------------------------------------------------

def cast(g: Graph, name: str, src: Tensor, dtype) -> str:
    return name if src._dtype == dtype else g.node("Cast", [name], to=onnx_type(g, dtype))


def _no_view_write(g, dst):
    if dst._base is not None and g.traced(dst._base):
        raise UnsupportedOperatorError(
            f"ember.onnx.export{g.where()}: an in-place write into a view of a traced tensor (x[...] = y) can't be "
            "exported; build the result with cat, where or masked ops instead")


def _copy_(g, args, out):
    dst, src = args[0], args[1]
    _no_view_write(g, dst)
    ns = g.inp(src)
    r = cast(g, ns, src, dst._dtype)
    if tuple(src._shape) != tuple(dst._shape):
        r = g.node("Expand", [r, g.ints(dst._shape, "shape")])
    g.bind(dst, r if r != ns else g.node("Identity", [ns]), [ns])


def _fill_(g, args, out):
    _no_view_write(g, args[0])
    g.forget(args[0])


def _to_copy(g, args, out):
    x = args[0]
    nx = g.inp(x)
    r = cast(g, nx, x, out._dtype)
    g.bind(out, r if r != nx else g.node("Identity", [nx]), [nx])


def _copy_to(g, args, out):
    src, shape, dtype = args
    ns = g.inp(src)
    r = cast(g, ns, src, out._dtype)
    if tuple(src._shape) != tuple(shape):
        r = g.node("Expand", [r, g.ints(shape, "shape")])
    g.bind(out, r if r != ns else g.node("Identity", [ns]), [ns])


def _identity(g, args, out):
    nx = g.inp(args[0])
    g.bind(out, g.node("Identity", [nx]), sym=g.sym.get(nx, ()))


# -- indexing, shape --------------------------------------------------------------------------

def _matmul(g, args, out):
    a, b = g.inp(args[0]), g.inp(args[1])
    g.bind(out, g.node("MatMul", [a, b]), [a, b])


def _gather(g, args, out):
    x, d, index = args
    nx, ni = g.inp(x), g.inp(index)
    g.bind(out, g.node("GatherElements", [nx, ni], axis=d), [ni, nx])


def _index_select(g, args, out):
    x, d, index = args
    nx, ni = g.inp(x), g.inp(index)
    g.bind(out, g.node("Gather", [nx, ni], axis=d), [nx, ni])


def _cat(g, args, out):
    tensors, d = args
    names = [g.inp(t) for t in tensors]
    g.bind(out, g.node("Concat", names, axis=d), names)


def _flip(g, args, out):
    x, dims = args
    nx = g.inp(x)
    n = len(dims)
    r = g.node("Slice", [nx, g.ints([-1] * n, "starts"), g.ints([-(2 ** 63)] * n, "ends"),
                         g.ints(list(dims), "axes"), g.ints([-1] * n, "steps")])
    g.bind(out, r, sym=g.sym.get(nx, ()))


UNARY = {"neg": "Neg", "abs": "Abs", "sign": "Sign", "exp": "Exp", "log": "Log", "sin": "Sin", "cos": "Cos",
         "tanh": "Tanh", "sqrt": "Sqrt", "erf": "Erf", "floor": "Floor", "ceil": "Ceil", "round": "Round",
         "logical_not": "Not", "sigmoid": "Sigmoid", "relu": "Relu", "reciprocal": "Reciprocal", "tan": "Tan",
         "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh",
         "acosh": "Acosh", "atanh": "Atanh"}
BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "maximum": "Max", "minimum": "Min",
          "eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual",
          "logical_and": "And", "logical_or": "Or", "logical_xor": "Xor", "bitwise_and": "BitwiseAnd",
          "bitwise_or": "BitwiseOr", "bitwise_xor": "BitwiseXor"}

CONVERTERS: dict = {
    **{k: unary(v) for k, v in UNARY.items()},
    **{k: binary(v) for k, v in BINARY.items()},
    "ne": binary("Equal", negate=True),
    "fmod": binary("Mod", fmod=1),
    "rsqrt": chain("Sqrt", "Reciprocal"),
    "trunc": _trunc,
    "square": _square,
    "where": _where,
    "clamp": _clamp,
    "sum": reduction("ReduceSum"),
    "mean": reduction("ReduceMean"),
    "prod": reduction("ReduceProd"),
    "amax": reduction("ReduceMax"),
    "amin": reduction("ReduceMin"),
    "logsumexp": reduction("ReduceLogSumExp"),
    "argmax": _arg("ArgMax"),
    "argmin": _arg("ArgMin"),
    "max_dim": _max_dim("ReduceMax", "ArgMax"),
    "min_dim": _max_dim("ReduceMin", "ArgMin"),
    "var": _var("var"),
    "std": _var("std"),
    "cumsum": _cumsum,
    "copy_": _copy_,
    "fill_": _fill_,
    "_to_copy": _to_copy,
    "_to_device": _to_copy,
    "_copy_to": _copy_to,
    "clone": _identity,
    "matmul": _matmul,
    "gather": _gather,
    "index_select": _index_select,
    "cat": _cat,
    "flip": _flip,
    **_nn.CONVERTERS,
}

VIEWS: dict = dict(_views.VIEWS)
