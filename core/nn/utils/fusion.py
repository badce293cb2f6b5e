"""Folding an inference-mode BatchNorm into the convolution or linear layer that feeds it.

In eval mode BatchNorm is the affine map ``y = (x - mean) * gamma / sqrt(var + eps) + beta``,
per channel; composed with the preceding layer's own affine map it is again one layer, whose
weight is scaled per output channel and whose bias absorbs the shift. The ``*_eval`` functions
return a fused copy of the layer; the ``*_weights`` functions compute the new parameters.
"""
from __future__ import annotations

import copy

from ... import ops as _ops
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _require_inference(layer, bn) -> None:
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")


def _require_statistics(bn) -> None:
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def _channel_scale(var, eps, gamma):
    """``gamma / sqrt(var + eps)``: the factor BatchNorm applies to each channel."""
    return gamma * _ops.rsqrt(var + eps)


def _fused_pair(weight, bias, like_weight, like_bias, bias_dtype):
    """The fused tensors as Parameters with the dtypes and ``requires_grad`` of the originals."""
    return (Parameter(weight.to(dtype=like_weight.dtype), like_weight.requires_grad),
            Parameter(bias.to(dtype=bias_dtype), like_bias.requires_grad))


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose: bool = False):
    """The ``(weight, bias)`` Parameters of a convolution equal to ``bn(conv(x))``.

    The output channels are axis 0 of ``conv_w``, or axis 1 for a transposed convolution
    (``transpose=True``). A missing conv bias counts as zeros, a missing BatchNorm affine as
    ``gamma = 1``, ``beta = 0``.
    """
    bias_dtype = conv_w.dtype if conv_b is None else conv_b.dtype
    base_bias = _ops.zeros_like(bn_rm) if conv_b is None else conv_b
    gamma = _ops.ones_like(bn_rm) if bn_w is None else bn_w
    beta = _ops.zeros_like(bn_rm) if bn_b is None else bn_b
    scale = _channel_scale(bn_rv, bn_eps, gamma)
    per_channel = [1] * conv_w.dim()
    per_channel[1 if transpose else 0] = -1
    weight = conv_w * scale.reshape(per_channel)
    bias = (base_bias - bn_rm) * scale + beta
    return _fused_pair(weight, bias, conv_w, base_bias, bias_dtype)


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A deep copy of ``conv`` whose output equals ``bn(conv(x))``; both must be in eval mode."""
    _require_inference(conv, bn)
    _require_statistics(bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The ``(weight, bias)`` Parameters of a linear layer equal to ``bn(linear(x))`` (a missing
    linear bias counts as zeros; a BatchNorm of one feature scales every output)."""
    bias_dtype = linear_w.dtype if linear_b is None else linear_b.dtype
    base_bias = _ops.zeros_like(bn_rm) if linear_b is None else linear_b
    scale = _channel_scale(bn_rv, bn_eps, bn_w)
    weight = linear_w * scale.unsqueeze(-1).to(dtype=linear_w.dtype)
    bias = (base_bias - bn_rm) * scale + bn_b
    return _fused_pair(weight, bias, linear_w, base_bias, bias_dtype)


def fuse_linear_bn_eval(linear, bn):
    """A deep copy of ``linear`` whose output equals ``bn(linear(x))``; both must be in eval mode."""
    _require_inference(linear, bn)
    if bn.num_features not in (1, linear.out_features):
        raise AssertionError(
            f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
            f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    _require_statistics(bn)
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused
