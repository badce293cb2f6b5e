"""The primitives: the ops every backend must implement; everything else in ember decomposes into
them. :data:`SIGNATURES` states each kernel's exact signature, one line per primitive; the
comments of each group below state what the core guarantees about the arguments and what the
kernel must return. docs/backends.md is the guide.

Rules for every primitive kernel:

* **Arguments are validated.** The op front ends (or the core's own callers) have already
  checked and normalised everything: tensors live on this backend (``copy_``'s ``src`` may be on
  another device index of it; every other tensor argument is on one device), shapes broadcast,
  dtypes are promoted to the one the kernel computes in, dims are non-negative ints (sorted
  tuples for reductions), python scalars are converted to ``bool``/``int``/``float`` matching
  the dtype's kind. A kernel never needs to raise for a bad argument, with two exceptions:
  indices and integer division (below).
* **Any strided layout.** Tensor arguments may be views: any strides (including 0, and
  transposed or sliced ones) and any storage offset. Read them through their geometry
  (``t.shape``, ``t.stride()``, ``t.storage_offset()``, all in elements).
* **New results.** Every primitive except the four that write (``copy_``, ``fill_``,
  ``uniform_``, ``normal_``: see :data:`IN_PLACE`) returns new tensors (any strides; contiguous
  is typical) built with ``ember.backend.make_tensor``, and never modifies its arguments. A
  kernel named in the backend's ``out_kernels`` also accepts a keyword ``out=``: a tensor of the
  result's shape and dtype to write into, which may alias an input; it returns ``out``.
* **The writing primitives** modify their first argument in place, through its geometry (a
  view writes into its base's storage: every tensor sharing that storage sees the write), and
  return that same tensor object. Most core callers ignore the return value; none uses a
  different object in its place.
* **bool** is a dtype of 0/1 bytes: a kernel producing bool stores exactly 0 or 1 (``True +
  True`` is ``True``, stored as 1). Where a primitive receives bool operands, the arithmetic is
  logical: ``add``/``maximum``/``bitwise_or``/``scatter_add`` are *or*, ``mul``/``minimum``/
  ``bitwise_and`` are *and*, ``bitwise_xor`` is *xor*, ``amax`` is *any*, ``amin`` is *all*,
  ``False < True``. The front ends never pass bool to ``neg``, ``abs``, ``sign``, the float
  functions, the rounding functions, ``sub``, ``div``, ``pow``, ``fmod``, ``atan2``, ``sum``,
  ``prod``, ``cumsum``, ``argmax``/``argmin``, ``sort`` (cast to uint8) or ``matmul``.
* **Index errors.** Kernels that read indices (``gather``, ``scatter_add``, and any fast path
  that does) raise ``ember.backend.IndexOutOfRangeError`` (an ``IndexError`` and a
  ``RuntimeError``; make it with ``ember.backend.index_error(op, bad, dim, size)``) for any index
  outside ``[0, size)`` of its dimension, negative ones included (the front ends have already
  wrapped the indices PyTorch allows to be negative), before writing anything. Whatever the
  indices, a kernel never reads or writes outside a buffer.
* **Integer division by zero** (``div`` and ``fmod`` on integer operands) raises
  ``RuntimeError("ZeroDivisionError: integer division by zero")``; float division follows IEEE
  (``x / 0`` is ``+-inf`` or ``nan``), as do ``log``, ``sqrt``... of out-of-domain inputs (no error).
* **Element types.** Integer arithmetic wraps (two's complement); float16/bfloat16 may compute in
  float32 and round once at the end; ``bfloat16``'s numpy dtype on the host is
  ``ember.bfloat16.np`` (``ml_dtypes.bfloat16``).
"""

# Runtime verbs are methods of ember.backend.Backend, not kernels:
# empty, from_numpy, to_numpy, synchronize, data_ptr, device_count, create_generator.

# Memory. copy_: a strided copy with cast and broadcast. dst keeps its dtype and geometry and is
# never self-overlapping (no stride-0 dim of size > 1: the front end refuses such a target); src
# has any dtype, broadcasts to dst's shape, and may be on another device index of this backend.
# The cast is numpy's "unsafe" astype: float -> int truncates toward zero, any -> bool is
# "nonzero" (NaN is True, -0.0 is False), bool -> number is 0/1. src may be dst itself or
# another view of dst's storage (the front end refuses a partial overlap of contiguous views,
# as PyTorch; one of strided views reaches the kernel: do not rely on its outcome). fill_: every
# element of dst set to value, a python bool/int/float matching dst's dtype kind.
MEMORY = ("copy_", "fill_")

# Unary, x -> a new tensor of x's shape. neg/abs/sign keep the dtype and get integer or floating
# inputs (sign(NaN) is NaN on ember's backends; PyTorch gives 0); exp/log/sin/cos/tanh/sqrt/erf
# get floating inputs only (the front ends cast integers to the default float dtype) and keep
# the dtype; floor/ceil/round/trunc get floating inputs only (round: half to even);
# logical_not gets any dtype (nonzero is true) and gives bool.
UNARY = ("neg", "abs", "sign", "exp", "log", "sin", "cos", "tanh", "sqrt", "erf",
         "floor", "ceil", "round", "trunc", "logical_not")

# Binary, (a, b) -> a new tensor of the broadcast shape. Tensor operands share one dtype; one of
# a, b may be a python scalar instead (at least one is a tensor). Arithmetic keeps the dtype:
# add/sub/mul/maximum/minimum on any dtype but bool for sub (bool: add/maximum are or,
# mul/minimum are and); div is true division for floats and division truncating toward zero
# for integers (the front ends give div float operands unless rounding_mode="trunc"); fmod is
# C's fmod (the result has the dividend's sign); pow is integer power for integers (exponents
# >= 0: the front ends handle negative ones) and IEEE pow for floats; maximum/minimum propagate
# NaN; atan2 gets floats only. Comparisons eq/ne/lt/le/gt/ge take any dtype and give bool (NaN
# compares unequal to everything); logical_* take any dtype (nonzero is true) and give bool;
# bitwise_* take integer or bool operands and keep the dtype.
BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmod", "atan2",
          "eq", "ne", "lt", "le", "gt", "ge",
          "logical_and", "logical_or", "logical_xor",
          "bitwise_and", "bitwise_or", "bitwise_xor")

# Ternary: where(cond, a, b): cond a bool tensor; a, b tensors of one dtype, or one of them a
# python scalar (the front end makes a 0-d tensor when both are scalars); all three broadcast;
# the result has a/b's dtype.
TERNARY = ("where",)

# Reductions. sum/prod/amax/amin(x, dims, keepdim): dims is a sorted tuple of distinct
# non-negative dims (every dim for a full reduction; () only for a 0-d x, which is then returned
# as a copy), keepdim a bool; the result keeps x's dtype. sum/prod get floats or integers, never
# bool (the front ends cast bool and integers to int64 unless the user asked for a dtype); an
# empty reduction gives 0 (sum) or 1 (prod). amax/amin get any dtype (bool: any/all), propagate
# NaN, and never reduce an empty dim. argmax/argmin(x, dim, keepdim): dim a non-negative int, or
# None for the flattened tensor (then keepdim is False and the result is 0-d; the core reshapes
# for keepdim); x is integer or floating (bool arrives as uint8); the reduced extent is never
# empty; the result is int64, the first index among ties, a NaN counting as both the maximum and
# the minimum (the first NaN wins). cumsum(x, dim): x at least 1-D, float or integer (int64
# unless the user asked for a dtype), dim a non-negative int; keeps the dtype.
REDUCE = ("sum", "prod", "amax", "amin", "argmax", "argmin", "cumsum")

# matmul(a, b): numpy's matmul (1-D operands promoted and the added dim removed, batch dims
# broadcast); both at least 1-D, one dtype (integer or floating, never bool), matching inner
# dims (an inner size of 0 gives zeros).
LINALG = ("matmul",)

# Indexing. gather(x, dim, index) and scatter_add(x, dim, index, src): x at least 1-D of any
# dtype; dim a non-negative int; index an int64 tensor of x's rank whose size in every dim but
# dim is at most x's. gather gives a new tensor of index's shape with
# out[i][j][k] = x[i][index[i][j][k]][k] (for dim=1). scatter_add gives a new tensor: a copy of
# x with src[i][j][k] added at x[i][index[i][j][k]][k] (dim=1), duplicates accumulating (bool:
# logical or); src has x's dtype and index's shape. nonzero(x): x at least 1-D, any dtype; the
# int64 [n, x.dim()] coordinates of its nonzero elements in row-major order.
# sort(x, dim, descending, stable): x at least 1-D, never bool; a plain (values, int64 indices)
# tuple sorted along dim, NaN last (first when descending); with stable=True equal elements keep
# their order (a stable sort is always allowed).
INDEX = ("gather", "scatter_add", "nonzero", "sort")

# Random fills, in place: t is a contiguous floating tensor (possibly at an offset in a larger
# storage); generator is the object the backend's create_generator returned (ember.Generator's
# backend generator). uniform_(t, low, high, generator) draws in [low, high) (low <= high);
# normal_(t, mean, std, generator) draws from N(mean, std^2) (std >= 0).
RANDOM = ("uniform_", "normal_")

PRIMITIVES = MEMORY + UNARY + BINARY + TERNARY + REDUCE + LINALG + INDEX + RANDOM
GROUPS = {"memory": MEMORY, "unary": UNARY, "binary": BINARY, "ternary": TERNARY, "reduce": REDUCE,
          "linalg": LINALG, "index": INDEX, "random": RANDOM}

#: the primitives that write into their first argument (and return it); the others return new
#: tensors and leave their arguments alone
IN_PLACE = ("copy_", "fill_", "uniform_", "normal_")

_UNARY = "({x}: Tensor) -> Tensor"
_BINARY = "(a: Tensor | scalar, b: Tensor | scalar) -> Tensor"

#: each primitive's exact kernel signature: the positional arguments the core passes, in order
#: (``scalar`` is a python bool/int/float; an ``out_kernels`` kernel also takes ``out=``)
SIGNATURES = {
    "copy_": "copy_(dst: Tensor, src: Tensor) -> dst",
    "fill_": "fill_(dst: Tensor, value: scalar) -> dst",
    **{name: name + _UNARY.format(x="x") for name in UNARY},
    **{name: name + _BINARY for name in BINARY},
    "where": "where(cond: Tensor[bool], a: Tensor | scalar, b: Tensor | scalar) -> Tensor",
    "sum": "sum(x: Tensor, dims: tuple[int, ...], keepdim: bool) -> Tensor",
    "prod": "prod(x: Tensor, dims: tuple[int, ...], keepdim: bool) -> Tensor",
    "amax": "amax(x: Tensor, dims: tuple[int, ...], keepdim: bool) -> Tensor",
    "amin": "amin(x: Tensor, dims: tuple[int, ...], keepdim: bool) -> Tensor",
    "argmax": "argmax(x: Tensor, dim: int | None, keepdim: bool) -> Tensor[int64]",
    "argmin": "argmin(x: Tensor, dim: int | None, keepdim: bool) -> Tensor[int64]",
    "cumsum": "cumsum(x: Tensor, dim: int) -> Tensor",
    "matmul": "matmul(a: Tensor, b: Tensor) -> Tensor",
    "gather": "gather(x: Tensor, dim: int, index: Tensor[int64]) -> Tensor",
    "scatter_add": "scatter_add(x: Tensor, dim: int, index: Tensor[int64], src: Tensor) -> Tensor",
    "nonzero": "nonzero(x: Tensor) -> Tensor[int64]",
    "sort": "sort(x: Tensor, dim: int, descending: bool, stable: bool) -> (Tensor, Tensor[int64])",
    "uniform_": "uniform_(t: Tensor, low: float, high: float, generator) -> t",
    "normal_": "normal_(t: Tensor, mean: float, std: float, generator) -> t",
}


def arity(name: str) -> int:
    """The number of positional arguments the core passes to primitive ``name``'s kernel."""
    params = SIGNATURES[name].split("(", 1)[1].rsplit(") ->", 1)[0]
    depth, count = 0, 1
    for ch in params:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "," and depth == 0:
            count += 1
    return count
