"""View ops: new shape/strides/offset over the same storage, in the core, for every backend.

Each records one graph node when its input takes part in autograd; the output shares the
input's storage and version counter and remembers its base (``_base``).
"""
from __future__ import annotations

import math
import warnings

from .. import _dtype as D
from .. import _state
from .._tensor import Tensor, _alias, _wrap_dim
from .._graph import scatter_to_geometry
from ..backend import contiguous_strides
from . import _args as U
from . import complexops as CX
from . import copy as CP
from . import creation as CR
from . import writes as W
from .declare import composite, viewop

__all__ = ["adjoint", "alias", "as_strided", "as_strided_", "atleast_1d", "atleast_2d", "atleast_3d",
           "broadcast_to", "chunk", "diagonal", "dsplit", "expand", "expand_as", "flatten", "hsplit", "moveaxis",
           "movedim", "narrow", "permute", "ravel", "reshape", "reshape_as", "select", "split", "split_with_sizes",
           "squeeze", "squeeze_", "swapaxes", "swapaxes_", "swapdims", "swapdims_", "t", "t_", "tensor_split",
           "transpose", "transpose_", "unbind", "unflatten", "unfold", "unsqueeze", "unsqueeze_", "view", "view_as",
           "vsplit"]

_grad = _state.grad


def infer_size(shape, numel: int, op: str = "view") -> tuple:
    """``shape`` with its one -1 replaced to hold ``numel`` elements (refused otherwise)."""
    if shape.__class__ is tuple and (not shape or min(shape) >= 0) and math.prod(shape) == numel:
        return shape  # (nothing to infer, nothing to refuse)
    shape = list(shape)
    neg = None
    known = 1
    for i, s in enumerate(shape):
        if s == -1:
            if neg is not None:
                raise RuntimeError(f"{op}: only one dimension can be inferred")
            neg = i
        elif s < 0:
            raise RuntimeError(f"{op}: invalid shape dimension {s}")
        else:
            known *= s
    if neg is not None:
        if known == 0 or numel % known != 0:
            raise RuntimeError(f"shape '{_fmt(shape)}' is invalid for input of size {numel}")
        shape[neg] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{_fmt(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def _fmt(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


_VIEW_STRIDES: dict = {}  # (shape, stride, newshape) -> view_strides' answer (a model reshapes a few ways)
_MISS = object()


def view_strides(shape, stride, newshape):
    """Strides that let ``newshape`` view a tensor of ``shape``/``stride``, or None."""
    key = (shape, stride, newshape)
    st = _VIEW_STRIDES.get(key, _MISS)
    if st is _MISS:
        if len(_VIEW_STRIDES) >= 4096:
            _VIEW_STRIDES.clear()
        st = _VIEW_STRIDES[key] = _view_strides(shape, stride, newshape)
    return st


def _view_strides(shape, stride, newshape):
    if math.prod(shape) == 0 or not shape:
        return contiguous_strides(newshape)
    newstride = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base_stride = stride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[tensor_d]
        if tensor_d == 0 or (shape[tensor_d - 1] != 1 and stride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base_stride
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = stride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


def _reshape_bw(ctx, g):
    return (g.reshape(ctx.args[0].shape),)


@viewop("view", backward=_reshape_bw)
def view(self: Tensor, *shape):
    """The same data with another shape; refuses strides that can't be viewed (use ``reshape``).
    ``view(dtype)`` reinterprets the bytes as another dtype."""
    if len(shape) == 1 and (isinstance(shape[0], D.dtype) or isinstance(shape[0], str)):
        return _view_dtype(self, D.to_dtype(shape[0]))
    if not shape:
        raise TypeError("view() received an invalid combination of arguments - got (), but expected one of: "
                        "(torch.dtype dtype), (tuple of ints size)")
    shape = infer_size(U.size_arg(shape, "view"), math.prod(self._shape), "view")
    if shape == self._shape:
        st = self._stride
    else:
        st = view_strides(self._shape, self._stride, shape)
        if st is None:
            raise RuntimeError(
                f"view size is not compatible with input tensor's size and stride (at least one dimension spans "
                f"across two contiguous subspaces). Use .reshape(...) instead. (input shape {list(self._shape)}, "
                f"stride {list(self._stride)}, requested {list(shape)})")
    return self, shape, st, self._offset, (self, shape)


def _view_dtype(self, dtype):
    if dtype is self._dtype:
        return _alias(self, self._shape, self._stride, self._offset)
    a, b = self._dtype.itemsize, dtype.itemsize
    if self._requires_grad and _grad.enabled:
        raise RuntimeError("view(dtype) is not differentiable; detach() the tensor first")
    if a == b:
        v = _alias(self, self._shape, self._stride, self._offset)
        v._dtype = dtype
        return v
    if not self._shape or self._stride[-1] != 1:
        raise RuntimeError(f"view(dtype): self.stride(-1) must be 1 to view {self._dtype} as {dtype} "
                           "(different element sizes)")
    last = self._shape[-1] * a
    if last % b or (self._offset * a) % b or any((s * a) % b for s in self._stride[:-1]):
        raise RuntimeError(f"view(dtype): the last dimension's size in bytes ({last}) or the storage offset is not "
                           f"divisible by the new element size {b}")
    shape = self._shape[:-1] + (last // b,)
    stride = tuple(s * a // b for s in self._stride[:-1]) + (1,)
    v = _alias(self, shape, stride, self._offset * a // b)
    v._dtype = dtype
    return v


@viewop("reshape", backward=_reshape_bw)
def reshape(self: Tensor, *shape):
    """A view when the strides allow it, otherwise a contiguous copy with the new shape."""
    shape = infer_size(U.size_arg(shape, "reshape"), self.numel(), "reshape")
    if shape == self._shape:
        return self, shape, self._stride, self._offset, (self, shape)
    st = view_strides(self._shape, self._stride, shape)
    if st is not None:
        return self, shape, st, self._offset, (self, shape)
    c = CP.clone(self)
    return c, shape, contiguous_strides(shape), c._offset, (c, shape)


@composite("view_as", out=False)
def view_as(self, other):
    """:func:`view` with ``other``'s shape."""
    return view(self, other._shape)


@composite("reshape_as", out=False)
def reshape_as(self, other):
    """:func:`reshape` to ``other``'s shape."""
    return reshape(self, other._shape)


def _as_strided_bw(ctx, g):
    x, size, stride, offset = ctx.args
    return (scatter_to_geometry(g, (tuple(size), tuple(stride), offset), x.shape, x._stride, x._offset),)


@viewop("as_strided", backward=_as_strided_bw, inplace=True)
def as_strided(input: Tensor, size, stride, storage_offset=None):
    """A view with explicit size, stride and storage offset (all in elements)."""
    size = tuple(int(s) for s in size)
    stride = tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided: mismatch in length of strides ({len(stride)}) and shape ({len(size)})")
    offset = input._offset if storage_offset is None else int(storage_offset)
    if any(s < 0 for s in size) or any(s < 0 for s in stride) or offset < 0:
        raise RuntimeError(f"as_strided: negative size, stride or offset (size {list(size)}, "
                           f"stride {list(stride)}, offset {offset})")
    if math.prod(size):
        last = offset + sum((s - 1) * st for s, st in zip(size, stride))
        cap = input._storage._nbytes // input._dtype.itemsize
        if last >= cap:
            raise RuntimeError(
                f"as_strided: setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                f"itemsize {input._dtype.itemsize} requiring a storage size of "
                f"{(last + 1) * input._dtype.itemsize} are "
                f"out of bounds for storage of size {input._storage._nbytes}")
    return input, size, stride, offset, (input, size, stride, offset)


as_strided_ = as_strided.inplace


def _expand_bw(ctx, g):
    return (g,)  # the engine sums broadcast dimensions back to the input's shape


@viewop("expand", backward=_expand_bw)
def expand(self: Tensor, *sizes):
    """A view with size-1 dimensions repeated (stride 0), ``-1`` keeping a size."""
    sizes = U.size_arg(sizes, "expand")
    nd = len(self._shape)
    if len(sizes) < nd:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({nd})")
    lead = len(sizes) - nd
    shape, stride = [], []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"expand: the expanded size of the tensor ({s}) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            shape.append(s)
            stride.append(0)
            continue
        cur, st = self._shape[i - lead], self._stride[i - lead]
        if s == -1:
            s = cur
        if cur == s:
            shape.append(s)
            stride.append(st)
        elif cur == 1:
            shape.append(s)
            stride.append(0)
        else:
            raise RuntimeError(
                f"expand: The expanded size of the tensor ({s}) must match the existing size ({cur}) at non-singleton "
                f"dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: {list(self._shape)}")
    shape = tuple(shape)
    return self, shape, tuple(stride), self._offset, (self, shape)


@composite("expand_as", out=False)
def expand_as(self, other):
    """:func:`expand` to ``other``'s shape."""
    return expand(self, other._shape)


@composite("broadcast_to", out=False)
def broadcast_to(input, size):
    """:func:`expand` to ``size`` (a view; -1 keeps a size)."""
    return expand(input, *size) if not isinstance(size, int) else expand(input, size)


@viewop("permute", backward=lambda ctx, g: (permute(g, U.inverse_permutation(ctx.args[1])),))
def permute(input: Tensor, *dims):
    """A view with dimensions reordered."""
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    nd = len(input._shape)
    if len(dims) != nd:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does not match the length "
                           "of the desired ordering of dimensions i.e. "
                           f"input.dim() = {nd} is not equal to len(dims) = {len(dims)}")
    dims = tuple(_wrap_dim(d, nd, "permute") for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError(f"permute: repeated dim in {list(dims)}")
    shape = tuple(input._shape[d] for d in dims)
    stride = tuple(input._stride[d] for d in dims)
    return input, shape, stride, input._offset, (input, dims)


@viewop("transpose", backward=lambda ctx, g: (transpose(g, ctx.args[1], ctx.args[2]),), inplace=True)
def transpose(input: Tensor, dim0: int, dim1: int):
    """A view with two dimensions swapped."""
    nd = len(input._shape)
    d0 = _wrap_dim(dim0, nd, "transpose")
    d1 = _wrap_dim(dim1, nd, "transpose")
    if nd == 0:
        return input, (), (), input._offset, (input, 0, 0)
    shape = list(input._shape)
    stride = list(input._stride)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    stride[d0], stride[d1] = stride[d1], stride[d0]
    return input, tuple(shape), tuple(stride), input._offset, (input, d0, d1)


transpose_ = transpose.inplace
swapaxes = swapdims = transpose
swapaxes_ = swapdims_ = transpose_


def _t_impl(input):
    """Transpose of a tensor with at most 2 dimensions."""
    if input.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.dim()}D")
    return transpose(input, 0, 1) if input.dim() == 2 else transpose(input, 0, 0)


t = composite("t", _t_impl, out=False, inplace=lambda self: W.become_view(self, t(self), "t_"))
t_ = t.inplace


@composite("adjoint", out=False)
def adjoint(input):
    """The last two dims swapped, conjugated (a view for real tensors; a new tensor for complex
    ones, as ember conjugates eagerly)."""
    if input.dim() == 0:
        warnings.warn("adjoint() is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=3)
        return alias(input)
    if input.dim() == 1:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return CX.conj(transpose(input, -2, -1))


@composite("movedim", out=False)
def movedim(input: Tensor, source, destination):
    """Move dims at ``source`` to ``destination`` (ints or sequences)."""
    nd = input.dim()
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the same "
                           f"number of dims as destination ({dst} dims)")
    src = [_wrap_dim(d, nd, "movedim") for d in src]
    dst = [_wrap_dim(d, nd, "movedim") for d in dst]
    for name, ds in (("source", src), ("destination", dst)):
        if len(set(ds)) != len(ds):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({ds})")
    if nd == 0:
        return permute(input, ())
    order = [-1] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(nd) if d not in src)
    order = [o if o != -1 else next(rest) for o in order]
    return permute(input, order)


moveaxis = movedim


@viewop("squeeze", backward=_reshape_bw, inplace=True)
def squeeze(input: Tensor, dim=None):
    """Remove size-1 dimensions (all, or those in ``dim``)."""
    nd = input.dim()
    if dim is None:
        keep = [i for i in range(nd) if input._shape[i] != 1]
    else:
        dims = U.dims_arg(dim, nd, "squeeze") if nd else ()
        keep = [i for i in range(nd) if not (i in dims and input._shape[i] == 1)]
    shape = tuple(input._shape[i] for i in keep)
    stride = tuple(input._stride[i] for i in keep)
    return input, shape, stride, input._offset, (input, dim)


@viewop("unsqueeze", backward=_reshape_bw, inplace=True)
def unsqueeze(input: Tensor, dim: int):
    """Insert a size-1 dimension at ``dim``."""
    nd = input.dim()
    d = _wrap_dim(dim, nd + 1, "unsqueeze")
    shape = list(input._shape)
    stride = list(input._stride)
    st = shape[d] * stride[d] if d < nd else 1
    shape.insert(d, 1)
    stride.insert(d, st)
    return input, tuple(shape), tuple(stride), input._offset, (input, d)


squeeze_, unsqueeze_ = squeeze.inplace, unsqueeze.inplace


def _embed_bw(make_view):
    """Backward of a view that selects part of its input: zeros with the gradient placed in."""
    def bw(ctx, g):
        x = ctx.args[0]
        z = CR.zeros(x.shape, dtype=g._dtype, device=g._device)
        make_view(z, *ctx.args[1:]).copy_(g)
        return (z,)
    return bw


@viewop("select", backward=_embed_bw(lambda z, d, i: select(z, d, i)))
def select(input: Tensor, dim: int, index: int):
    """The slice at ``index`` along ``dim``, with that dimension removed."""
    nd = input.dim()
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, nd, "select")
    size = input._shape[d]
    if isinstance(index, Tensor):
        index = int(index.item())
    if index < -size or index >= size:
        raise U.IndexOutOfRangeError(f"index {index} is out of bounds for dimension {d} with size {size}")
    if index < 0:
        index += size
    shape = input._shape[:d] + input._shape[d + 1:]
    stride = input._stride[:d] + input._stride[d + 1:]
    return input, shape, stride, input._offset + index * input._stride[d], (input, d, index)


# x[start:stop:step] along one dim (the front end of basic slicing; not a public function)
@viewop("slice", backward=_embed_bw(lambda z, d, s, e, st: slice_dim(z, d, s, e, st)), method=False)
def slice_dim(input: Tensor, dim: int, start, stop, step: int = 1):
    """``input[..., start:stop:step, ...]`` along ``dim`` (python slice rules; step > 0)."""
    d = _wrap_dim(dim, input.dim(), "slice")
    size = input._shape[d]
    if step is None:
        step = 1
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start, stop, _ = slice(start, stop, step).indices(size)
    n = max(0, (stop - start + step - 1) // step)
    shape = input._shape[:d] + (n,) + input._shape[d + 1:]
    stride = input._stride[:d] + (input._stride[d] * step,) + input._stride[d + 1:]
    offset = input._offset + (start * input._stride[d] if n else 0)
    return input, shape, stride, offset, (input, d, start, stop, step)


@composite("narrow", out=False)
def narrow(input: Tensor, dim: int, start, length: int):
    """``length`` elements from ``start`` along ``dim``, as a view."""
    nd = input.dim()
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, nd, "narrow")
    size = input._shape[d]
    if isinstance(start, Tensor):
        start = int(start.item())
    if start < -size or start > size:
        raise U.IndexOutOfRangeError(f"narrow: start out of range (expected to be in range of [{-size}, {size}], but "
                                     f"got {start})")
    if start < 0:
        start += size
    if length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return slice_dim(input, d, start, start + length, 1)


def _diag_view(z, offset, d1, d2):
    return diagonal(z, offset, d1, d2)


@viewop("diagonal", backward=_embed_bw(_diag_view))
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """The diagonal of the (dim1, dim2) planes as a view, its length the last dimension."""
    nd = input.dim()
    d1 = _wrap_dim(dim1, nd, "diagonal")
    d2 = _wrap_dim(dim2, nd, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    s1, s2 = input._shape[d1], input._shape[d2]
    if offset >= 0:
        n = max(0, min(s1, s2 - offset))
        off = input._offset + (offset * input._stride[d2] if n else 0)
    else:
        n = max(0, min(s1 + offset, s2))
        off = input._offset + (-offset * input._stride[d1] if n else 0)
    keep = [i for i in range(nd) if i not in (d1, d2)]
    shape = tuple(input._shape[i] for i in keep) + (n,)
    stride = tuple(input._stride[i] for i in keep) + (input._stride[d1] + input._stride[d2],)
    return input, shape, stride, off, (input, offset, d1, d2)


def _unfold_bw(ctx, g):
    x, d, size, step = ctx.args
    if not x.dim():  # a 0-d tensor: one window of size 1 (or 0) along a new dim
        return (g.sum(),)
    z = CR.zeros(x.shape, dtype=g._dtype, device=g._device)
    n = g._shape[d]
    if n:
        for k in range(size):  # window element k of every window: one strided, non-overlapping region
            region = slice_dim(z, d, k, k + step * (n - 1) + 1, step)
            region.add_(select(g, -1, k))
    return (z,)


@viewop("unfold", backward=_unfold_bw)
def unfold(self: Tensor, dimension: int, size: int, step: int):
    """All windows of ``size`` along ``dimension`` with ``step``, windows in a new last dim."""
    nd = self.dim()
    d = _wrap_dim(dimension, nd, "unfold") if nd else 0
    cur = self._shape[d] if nd else 1
    if size > cur:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {cur} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    n = (cur - size) // step + 1
    st = self._stride[d] if nd else 1
    shape = list(self._shape)
    stride = list(self._stride)
    if nd:
        shape[d] = n
        stride[d] = st * step
    shape.append(size)
    stride.append(st)
    return self, tuple(shape), tuple(stride), self._offset, (self, d, size, step)


@viewop("alias", backward=_reshape_bw)
def alias(input: Tensor):
    """A view of the whole tensor."""
    return input, input._shape, input._stride, input._offset, (input, input._shape)


# -- ops built from the views above ----------------------------------------------------------

@composite("flatten", out=False)
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one (a view when possible)."""
    nd = input.dim()
    if nd == 0:
        return reshape(input, (1,))
    s = _wrap_dim(start_dim, nd, "flatten")
    e = _wrap_dim(end_dim, nd, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shape = input._shape[:s] + (math.prod(input._shape[s:e + 1]),) + input._shape[e + 1:]
    return reshape(input, shape)


@composite("unflatten", out=False)
def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one may be -1)."""
    nd = input.dim()
    if nd == 0:
        raise RuntimeError("unflatten: Dimension specified as 0 but tensor has no dimensions (a 0-d tensor has no dim "
                           "to unflatten)")
    d = _wrap_dim(dim, nd, "unflatten")
    if len(tuple(sizes)) == 0:
        raise RuntimeError("unflatten: sizes must be non-empty")
    sizes = infer_size(tuple(sizes), input._shape[d], "unflatten")
    return view(input, input._shape[:d] + tuple(sizes) + input._shape[d + 1:]) if _viewable(input, d, sizes) else \
        reshape(input, input._shape[:d] + tuple(sizes) + input._shape[d + 1:])


def _viewable(x, d, sizes):
    return view_strides(x._shape, x._stride, x._shape[:d] + tuple(sizes) + x._shape[d + 1:]) is not None


@composite("ravel", out=False)
def ravel(input):
    """The flattened tensor (a view when the strides allow it)."""
    return reshape(input, (-1,))


@composite("split", out=False)
def split(tensor: Tensor, split_size_or_sections, dim: int = 0):
    """Views of chunks of ``split_size`` (the last may be smaller) or of the given sizes."""
    if tensor.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, tensor.dim(), "split")
    size = tensor._shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
        if step == 0 and size != 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
        if size == 0:
            return (tensor,)
        return tuple(narrow(tensor, d, s, min(step, size - s)) for s in range(0, size, step))
    sections = [int(s) for s in split_size_or_sections]
    if sum(sections) != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at "
                           f"dimension {d}), but got split_sizes={sections}")
    out, start = [], 0
    for s in sections:
        out.append(narrow(tensor, d, start, s))
        start += s
    return tuple(out)


@composite("chunk", out=False)
def chunk(input: Tensor, chunks: int, dim: int = 0):
    """``chunks`` views of nearly equal size along ``dim`` (fewer when the size is small)."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    if input.dim() == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, input.dim(), "chunk")
    size = input._shape[d]
    if size == 0:  # as PyTorch: ``chunks`` empty pieces
        return tuple(narrow(input, d, 0, 0) for _ in range(chunks))
    return split(input, -(-size // chunks), d)


@composite("tensor_split", out=False)
def tensor_split(input: Tensor, indices_or_sections, dim: int = 0):
    """numpy's array_split: n sections (the first ``size % n`` one larger) or split points."""
    if input.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = _wrap_dim(dim, input.dim(), "tensor_split")
    size = input._shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        q, r = divmod(size, n)
        sizes = [q + 1] * r + [q] * (n - r)
        out, start = [], 0
        for s in sizes:
            out.append(narrow(input, d, start, s))
            start += s
        return tuple(out)
    # split points behave as python slice bounds: x[:i0], x[i0:i1], ..., x[ik:]
    def bound(v):
        v = int(v)
        return min(max(v + size if v < 0 else v, 0), size)
    points = [0] + [bound(i) for i in indices_or_sections] + [size]
    out = []
    for a, b in zip(points[:-1], points[1:]):
        out.append(narrow(input, d, a, max(0, b - a)))
    return tuple(out)


@composite("split_with_sizes", out=False)
def split_with_sizes(tensor: Tensor, split_sizes, dim: int = 0):
    """Views of the given sizes along ``dim`` (they must sum to its length)."""
    return split(tensor, list(split_sizes), dim)


@composite("unbind", out=False)
def unbind(input: Tensor, dim: int = 0):
    """All slices along ``dim`` as views."""
    d = _wrap_dim(dim, input.dim(), "unbind")
    return tuple(select(input, d, i) for i in range(input._shape[d]))


def _split_at(op, input, sections, min_dims, d):
    """hsplit/vsplit/dsplit: :func:`tensor_split` along ``d``; ``sections`` (an int) must divide
    the dim's size evenly."""
    if input.dim() < min_dims:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_dims} dimension, but got a tensor with "
                           f"{input.dim()} dimensions!")
    if isinstance(sections, int) and sections >= 0:
        size = input._shape[d]
        if sections == 0 or size % sections:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {d}, but the size of the dimension "
                               f"{size} is not divisible by the split_size {sections}!")
    return tensor_split(input, sections, d)


@composite("hsplit", out=False)
def hsplit(input, sections):
    """:func:`tensor_split` along dim 1 (dim 0 for 1-D tensors)."""
    return _split_at("hsplit", input, sections, 1, 1 if input.dim() > 1 else 0)


@composite("vsplit", out=False)
def vsplit(input, sections):
    """:func:`tensor_split` along dim 0."""
    return _split_at("vsplit", input, sections, 2, 0)


@composite("dsplit", out=False)
def dsplit(input, sections):
    """:func:`tensor_split` along dim 2."""
    return _split_at("dsplit", input, sections, 3, 2)


@composite("atleast_1d", out=False, method=False)
def atleast_1d(*ts):
    """Each tensor with at least 1 dim (0-d ones become shape (1,))."""
    r = tuple(reshape(t, (1,)) if t.dim() == 0 else t for t in _flat_args(ts))
    return r[0] if len(r) == 1 else r


@composite("atleast_2d", out=False, method=False)
def atleast_2d(*ts):
    """Each tensor with at least 2 dims."""
    def f(t):
        if t.dim() == 0:
            return reshape(t, (1, 1))
        if t.dim() == 1:
            return unsqueeze(t, 0)
        return t
    r = tuple(f(t) for t in _flat_args(ts))
    return r[0] if len(r) == 1 else r


@composite("atleast_3d", out=False, method=False)
def atleast_3d(*ts):
    """Each tensor with at least 3 dims."""
    def f(t):
        if t.dim() == 0:
            return reshape(t, (1, 1, 1))
        if t.dim() == 1:
            return reshape(t, (1, t._shape[0], 1))
        if t.dim() == 2:
            return unsqueeze(t, -1)
        return t
    r = tuple(f(t) for t in _flat_args(ts))
    return r[0] if len(r) == 1 else r


def _flat_args(ts):
    if len(ts) == 1 and isinstance(ts[0], (list, tuple)):
        return tuple(ts[0])
    return ts
