"""Linear maps: ``F.linear``, ``F.bilinear``, convolutions and their transposes, ``F.unfold``/``F.fold``."""
from __future__ import annotations

import math

from ... import _dtype as D
from ..._tensor import Tensor
from ...backend.shapes import conv_out, conv_transpose_out
from ...ops import _args as U
from ...ops import nn as _nnops
from ...ops.autocast import policy as _amp_policy
from ._util import check_tensor, desc, ntuple

__all__ = ["linear", "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold", "same_padding"]


def _same_dtype(op, x, *others):
    for o in others:
        if o is not None and o._dtype is not x._dtype:
            raise RuntimeError(f"{op}: expected input and weight/bias to have the same dtype, but got input "
                               f"{desc(x)} and {desc(o)}")
    U.common_device(op, x, *(o for o in others if o is not None))


@_amp_policy("linear")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``; ``input`` (*, in), ``weight`` (out, in), ``bias`` (out,)."""
    check_tensor(input, "linear")
    check_tensor(weight, "linear", "weight")
    if weight.dim() not in (1, 2):
        raise RuntimeError(f"linear: weight must be 1-D or 2-D, got {desc(weight)}")
    if input.dim() == 0:
        raise RuntimeError(f"linear: input must have at least one dimension, got {desc(input)}")
    in_f = weight.shape[-1]
    if input.shape[-1] != in_f:
        rows = input.numel() // input.shape[-1] if input.shape[-1] else 0
        raise RuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied ({rows}x{input.shape[-1]} and "
                           f"{in_f}x{weight.shape[0] if weight.dim() == 2 else 1}) (input {desc(input)}, weight "
                           f"{desc(weight)})")
    if bias is not None:
        check_tensor(bias, "linear", "bias")
    _same_dtype("linear", input, weight, bias)
    if weight.dim() == 1:
        if bias is not None and (input.dim() == 2 or (bias.dim() == 1 and input.is_contiguous())):
            # (PyTorch's fused addmm paths, taken for a 2-D input or a 1-D bias, need a matrix)
            raise RuntimeError(f"linear: mat2 must be a matrix, got 1-D tensor (weight {desc(weight)}, input "
                               f"{desc(input)}, bias {desc(bias)})")
        r = input.matmul(weight)
        return r if bias is None else r + bias
    if bias is not None and bias.dim() > 1 or input.dtype.category != D._FLOAT:
        r = input.matmul(weight.t())
        return r if bias is None else r + bias
    if bias is not None and tuple(bias.shape) not in ((weight.shape[0],), (1,), ()):
        raise RuntimeError(f"linear: bias must have {weight.shape[0]} elements, got {desc(bias)}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        bias = bias.expand(weight.shape[0])
    return _nnops.linear(input, weight, bias)


@_amp_policy("bilinear")
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y_o = x1^T W_o x2 + b_o``; inputs (*, in1) and (*, in2), weight (out, in1, in2)."""
    check_tensor(input1, "bilinear")
    check_tensor(input2, "bilinear", "input2")
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear: weight must be 3-D (out, in1, in2), got {desc(weight)}")
    O, I, J = weight.shape
    if input1.shape[-1] != I or input2.shape[-1] != J or input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear: input1 {desc(input1)} and input2 {desc(input2)} don't match weight "
                           f"{desc(weight)} (expected (*, {I}) and (*, {J}) with equal leading dims)")
    if I == 0 or J == 0:  # (PyTorch's reshape of the inputs to (-1, 0) fails)
        raise RuntimeError(f"bilinear: cannot reshape tensor of 0 elements into shape [-1, 0] (input1 {desc(input1)}, "
                           f"input2 {desc(input2)}, weight {desc(weight)})")
    lead = input1.shape[:-1]
    n = math.prod(lead)  # (no -1 in the reshapes: any size may be 0)
    x1 = input1.reshape(n, I)
    x2 = input2.reshape(n, J)
    tmp = x1.matmul(weight.permute(1, 0, 2).reshape(I, O * J)).reshape(n, O, J)
    y = (tmp * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(tuple(lead) + (O,))


def same_padding(kernel, dilation) -> tuple:
    """(left, right) per dim for padding='same' (extra on the right for even kernels, as PyTorch)."""
    out = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        out.append((total // 2, total - total // 2))
    return tuple(out)


def _conv_prep(op, nsp, input, weight, bias, stride, padding, dilation, groups):
    check_tensor(input, op)
    check_tensor(weight, op, "weight")
    if bias is not None:
        check_tensor(bias, op, "bias")
    batched = input.dim() == nsp + 2
    if not batched and input.dim() != nsp + 1:
        raise RuntimeError(f"{op}: Expected {nsp + 1}D (unbatched) or {nsp + 2}D (batched) input to {op}, but got "
                           f"input of size: {list(input.shape)}")
    if weight.dim() != nsp + 2:
        raise RuntimeError(f"{op}: weight must be {nsp + 2}-D, got {desc(weight)}")
    _same_dtype(op, input, weight, bias)
    if input.dtype.category != D._FLOAT:
        raise RuntimeError(f"{op}: expected a floating point input, got {desc(input)}")
    x = input if batched else input.unsqueeze(0)
    stride = ntuple(stride, nsp, "stride", op)
    dilation = ntuple(dilation, nsp, "dilation", op)
    if groups <= 0:
        raise RuntimeError(f"{op}: non-positive groups is not supported (groups={groups})")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported (stride={list(stride)})")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero (dilation={list(dilation)})")
    if weight.shape[0] == 0:
        raise RuntimeError(f"{op}: Given groups={groups}, expected weight to be at least 1 at dimension 0, but got "
                           f"weight of size {list(weight.shape)} instead")
    return x, batched, stride, dilation


def _conv_nd(op, nsp, input, weight, bias, stride, padding, dilation, groups):
    x, batched, stride, dilation = _conv_prep(op, nsp, input, weight, bias, stride, padding, dilation, groups)
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * nsp
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError(f"{op}: padding='same' is not supported for strided convolutions")
            lr = same_padding(kernel, dilation)
            if any(lo != hi for lo, hi in lr):
                pad = []
                for lo, hi in reversed(lr):
                    pad += [lo, hi]
                x = _nnops.constant_pad_nd(x, tuple(pad), 0.0)
                padding = (0,) * nsp
            else:
                padding = tuple(lo for lo, _ in lr)
        else:
            raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
    else:
        padding = ntuple(padding, nsp, "padding", op)
        if any(p < 0 for p in padding):
            raise RuntimeError(f"{op}: negative padding is not supported (padding={list(padding)})")
    C = x.shape[1]
    Cout = weight.shape[0]
    if C != weight.shape[1] * groups:
        raise RuntimeError(f"{op}: Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[1] * groups} channels, but got {C} channels instead")
    if Cout % groups:
        raise RuntimeError(f"{op}: Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(weight.shape)} instead")
    if bias is not None and tuple(bias.shape) != (Cout,):
        raise RuntimeError(f"{op}: Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{Cout} elements, but got bias of size {list(bias.shape)} instead")
    sp = x.shape[2:]
    padded = tuple(sp[i] + 2 * padding[i] for i in range(nsp))
    eff = tuple(dilation[i] * (kernel[i] - 1) + 1 for i in range(nsp))
    if any(e > p for e, p in zip(eff, padded)):
        raise RuntimeError(f"{op}: Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                           f"size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than actual input size")
    if C == 0:  # PyTorch answers an input without channels with an empty (N, 0, *out) result
        out_sp = tuple(conv_out(padded[i], kernel[i], stride[i], 0, dilation[i]) for i in range(nsp))
        out = x.reshape((x.shape[0], 0) + out_sp)
    else:
        out = _nnops.convolution(x, weight, bias, stride, padding, dilation, groups)
    return out if batched else out.squeeze(0)


@_amp_policy("conv1d")
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """1-d cross-correlation of (N, Cin, L) with weight (Cout, Cin/groups, k); padding may be 'same' or 'valid'."""
    return _conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@_amp_policy("conv2d")
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """2-d cross-correlation of (N, Cin, H, W) with weight (Cout, Cin/groups, kh, kw)."""
    return _conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@_amp_policy("conv3d")
def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """3-d cross-correlation of (N, Cin, D, H, W) with weight (Cout, Cin/groups, kd, kh, kw)."""
    return _conv_nd("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_t_nd(op, nsp, input, weight, bias, stride, padding, output_padding, groups, dilation):
    x, batched, stride, dilation = _conv_prep(op, nsp, input, weight, bias, stride, padding, dilation, groups)
    padding = ntuple(padding, nsp, "padding", op)
    output_padding = ntuple(output_padding, nsp, "output_padding", op)
    C = x.shape[1]
    if C != weight.shape[0]:
        raise RuntimeError(f"{op}: Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[0]} channels, but got {C} channels instead")
    if C % groups:
        raise RuntimeError(f"{op}: Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(weight.shape)} instead")
    Cout = weight.shape[1] * groups
    if bias is not None and tuple(bias.shape) != (Cout,):
        raise RuntimeError(f"{op}: Given transposed=1, weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {Cout} elements, but got bias of size {list(bias.shape)} instead")
    kernel = weight.shape[2:]
    out_sp = [conv_transpose_out(x.shape[2 + i], kernel[i], stride[i], padding[i], output_padding[i], dilation[i])
              for i in range(nsp)]
    if x.shape[0] == 0 and all(o >= 0 for o in out_sp):
        # an empty batch: PyTorch returns the empty result without its kernel's checks (in the graph)
        r = x.reshape(-1).narrow(0, 0, 0).reshape((0, Cout) + tuple(out_sp)) + weight.sum() * 0
        return r if bias is None else r + bias.sum() * 0
    for i in range(nsp):
        if output_padding[i] >= stride[i] and output_padding[i] >= dilation[i]:
            raise RuntimeError(f"{op}: output padding must be smaller than either stride or dilation, but got "
                               f"output_padding={list(output_padding)}, stride={list(stride)}, "
                               f"dilation={list(dilation)}")
    if any(o <= 0 for o in out_sp):
        raise RuntimeError(f"{op}: Given input size per channel: {list(x.shape[2:])}. Calculated output size per "
                           f"channel: {out_sp}. Output size is too small")
    out = _nnops.conv_transpose(x, weight, bias, stride, padding, output_padding, dilation, groups)
    return out if batched else out.squeeze(0)


@_amp_policy("conv_transpose1d")
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """1-d transposed convolution; weight (Cin, Cout/groups, k)."""
    return _conv_t_nd("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups, dilation)


@_amp_policy("conv_transpose2d")
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """2-d transposed convolution ("deconvolution"); weight (Cin, Cout/groups, kh, kw)."""
    return _conv_t_nd("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups, dilation)


@_amp_policy("conv_transpose3d")
def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """3-d transposed convolution; weight (Cin, Cout/groups, kd, kh, kw)."""
    return _conv_t_nd("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups, dilation)


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sliding local blocks of a (N, C, H, W) input as columns (N, C*kh*kw, L) (im2col)."""
    check_tensor(input, "unfold")
    batched = input.dim() == 4
    if input.dim() not in (3, 4):
        raise RuntimeError(f"unfold: Input Error: Only 3D or 4D input Tensors are supported (got {input.dim()}D)")
    x = input if batched else input.unsqueeze(0)
    k = ntuple(kernel_size, 2, "kernel_size", "unfold")
    d = ntuple(dilation, 2, "dilation", "unfold")
    p = ntuple(padding, 2, "padding", "unfold")
    s = ntuple(stride, 2, "stride", "unfold")
    out_sp = [conv_out(x.shape[2 + i], k[i], s[i], p[i], d[i]) for i in range(2)]
    if any(o <= 0 for o in out_sp):
        raise RuntimeError(f"unfold: Given input with spatial size {list(x.shape[2:])}, kernel_size={list(k)}, "
                           f"dilation={list(d)}, padding={list(p)}, calculated shape of the array of sliding blocks as "
                           f"{out_sp}, but its components must be at least one.")
    r = _nnops.im2col(x, k, d, p, s)
    return r if batched else r.squeeze(0)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sum columns (N, C*kh*kw, L) back into a (N, C, *output_size) tensor (col2im), the adjoint of unfold."""
    check_tensor(input, "fold")
    batched = input.dim() == 3
    if input.dim() not in (2, 3):
        raise RuntimeError(f"fold: Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                           f"(got {input.dim()}D)")
    if any(v == 0 for v in input.shape[int(batched):]):  # (only the batch may be empty)
        raise RuntimeError(f"fold: Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
                           f"non-zero dimensions for input, but got: {list(input.shape)}")
    x = input if batched else input.unsqueeze(0)
    o = ntuple(output_size, 2, "output_size", "fold")
    k = ntuple(kernel_size, 2, "kernel_size", "fold")
    d = ntuple(dilation, 2, "dilation", "fold")
    p = ntuple(padding, 2, "padding", "fold")
    s = ntuple(stride, 2, "stride", "fold")
    K = k[0] * k[1]
    if x.shape[1] % K:
        raise RuntimeError(f"fold: Expected size of input's dimension 1 to be divisible by the product of "
                           f"kernel_size, but got input.size(1)={x.shape[1]} and kernel_size={k}")
    blocks = [conv_out(o[i], k[i], s[i], p[i], d[i]) for i in range(2)]
    if blocks[0] * blocks[1] != x.shape[2]:
        raise RuntimeError(f"fold: Given output_size={o}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, "
                           f"expected size of input's dimension 2 to match the calculated number of sliding blocks "
                           f"{blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got input.size(2)={x.shape[2]}.")
    r = _nnops.col2im(x, o, k, d, p, s)
    return r if batched else r.squeeze(0)
