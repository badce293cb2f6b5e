"""These are the ops every backend must implement; everything else in ember decomposes into them.

Kernels receive arguments already validated by the op front ends: tensors of one device (a
backend's own), broadcast-compatible shapes, and the dtypes stated below. They return new
tensors (any strides; contiguous is typical) built with ``ember.backend.make_tensor``. A
kernel named in the backend's ``out_kernels`` also accepts ``out=`` (a tensor to write into,
which may alias an input). Kernels that read indices must raise
``ember.backend.IndexOutOfRangeError`` (an ``IndexError`` and a ``RuntimeError``) for any index
out of range, negative ones included (the front ends have already wrapped the indices PyTorch
allows to be negative), before writing anything; they never read or write outside a buffer.
"""

# Runtime verbs are methods of ember.backend.Backend, not kernels:
# empty, from_numpy, to_numpy, synchronize, data_ptr, device_count, create_generator.

# Memory: strided copy with cast and broadcast (dst keeps its dtype; src broadcasts to dst's
# shape and may be on another device of the same backend), and fill with a python scalar.
MEMORY = ("copy_", "fill_")

# Unary, x -> same shape. abs/neg/sign keep the dtype (ints included); the float functions get
# floating inputs only; floor/ceil/round/trunc get floats (round: half to even);
# logical_not gives bool.
UNARY = ("neg", "abs", "sign", "exp", "log", "sin", "cos", "tanh", "sqrt", "erf",
         "floor", "ceil", "round", "trunc", "logical_not")

# Binary, (a, b) broadcast, a python scalar allowed on either side (at least one tensor);
# tensor operands share one dtype. Arithmetic keeps it (div: true division for floats, division
# truncating toward zero for integers, raising RuntimeError on an integer division by zero;
# fmod: C fmod; pow: integer powers for integer inputs); comparisons and logical_* give bool;
# bitwise_* take integer or bool inputs.
BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmod", "atan2",
          "eq", "ne", "lt", "le", "gt", "ge",
          "logical_and", "logical_or", "logical_xor",
          "bitwise_and", "bitwise_or", "bitwise_xor")

# Ternary: where(cond: bool tensor, a, b) with a, b tensors or scalars of one dtype, broadcast.
TERNARY = ("where",)

# Reductions over a sorted tuple of dims (the front end passes every dim for a full reduction,
# and () for a 0-d tensor), with keepdim; the result keeps the input dtype, integers included (the
# front ends cast ints to int64 before sum/prod unless the user asked for a dtype). argmax/argmin
# take one dim or None (the flattened tensor) and give int64 with the first index of ties (the
# first NaN wins for both, as in PyTorch); cumsum(x, dim) keeps the dtype.
REDUCE = ("sum", "prod", "amax", "amin", "argmax", "argmin", "cumsum")

# matmul(a, b): numpy matmul semantics (1-D operands promoted, batch dims broadcast), one dtype.
LINALG = ("matmul",)

# Indexing: gather(x, dim, index) and scatter_add(x, dim, index, src) (out of place: a copy of
# x with src added at index) take int64 index tensors of x's rank; nonzero(x) gives int64
# [n, ndim]; sort(x, dim, descending, stable) gives (values, int64 indices).
INDEX = ("gather", "scatter_add", "nonzero", "sort")

# Random fills, in place, with a backend generator object (see Backend.create_generator):
# uniform_(t, low, high, generator) draws in [low, high); normal_(t, mean, std, generator).
RANDOM = ("uniform_", "normal_")

PRIMITIVES = MEMORY + UNARY + BINARY + TERNARY + REDUCE + LINALG + INDEX + RANDOM
GROUPS = {"memory": MEMORY, "unary": UNARY, "binary": BINARY, "ternary": TERNARY, "reduce": REDUCE,
          "linalg": LINALG, "index": INDEX, "random": RANDOM}
