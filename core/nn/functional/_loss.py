"""Loss functions, each with ``reduction`` ('none' | 'mean' | 'sum') and the legacy
``size_average`` / ``reduce`` flags."""
from __future__ import annotations

import math
import warnings

from ... import _dtype as D
from ...ops import creation as _factory
from ... import ops as _ops
from ... import _state
from ..._hoststep import host_step
from ..._tensor import Tensor
from ...ops import nn as _nnops
from ...ops.autocast import policy as _amp_policy
from ._activation import logsigmoid
from ._distance import pairwise_distance
from ._util import check_reduction, check_tensor, desc, legacy_reduction, reduce_loss

__all__ = ["l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss", "gaussian_nll_loss",
           "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss", "multilabel_soft_margin_loss",
           "multilabel_margin_loss", "multi_margin_loss", "soft_margin_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss", "ctc_loss"]


def _pair(op, input, target):
    check_tensor(input, op)
    check_tensor(target, op, "target")
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", UserWarning, stacklevel=3)
        _ops.broadcast_shapes(tuple(input.shape), tuple(target.shape))


@_amp_policy("l1_loss")
def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """|input - target|."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _pair("l1_loss", input, target)
    loss = _ops.abs(input - target)
    if weight is not None:
        loss = loss * weight
    return reduce_loss(loss, reduction, "l1_loss")


@_amp_policy("mse_loss")
def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """(input - target)^2."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _pair("mse_loss", input, target)
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return reduce_loss(loss, reduction, "mse_loss")


@_amp_policy("smooth_l1_loss")
def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _pair("smooth_l1_loss", input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    ad = _ops.abs(input - target)
    if beta == 0:
        return reduce_loss(ad, reduction, "smooth_l1_loss")
    loss = _ops.where(ad < beta, ad * ad * (0.5 / beta), ad - 0.5 * beta)
    return reduce_loss(loss, reduction, "smooth_l1_loss")


@_amp_policy("huber_loss")
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| <= delta, else delta (|d| - 0.5 delta)."""
    _pair("huber_loss", input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    ad = _ops.abs(input - target)
    loss = _ops.where(ad <= delta, ad * ad * 0.5, (ad - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return reduce_loss(loss, reduction, "huber_loss")


def _class_layout(op, input, target):
    """(M, C) inputs and (M,) targets for class-index losses, plus the target's shape."""
    if input.dim() == 0:
        raise ValueError(f"{op}: Expected 1 or more dimensions (got 0)")
    if input.dim() == 1:
        if target.dim() != 0:
            raise ValueError(f"{op}: Expected a 0-d target for a 1-d input, got target of shape {list(target.shape)}")
        return input.unsqueeze(0), target.reshape(1), ()
    N, C = input.shape[:2]
    if target.dim() == 0 or target.shape[0] != N:
        raise ValueError(f"{op}: Expected input batch_size ({N}) to match target batch_size "
                         f"({target.shape[0] if target.dim() else 0}).")
    if tuple(target.shape[1:]) != tuple(input.shape[2:]):
        raise RuntimeError(f"{op}: Expected target size {[N] + list(input.shape[2:])}, got {list(target.shape)}")
    if input.dim() == 2:
        return input, target, tuple(target.shape)
    x = input.movedim(1, -1).reshape(-1, C)
    return x, target.reshape(-1), tuple(target.shape)


def _check_target(op, target):
    if target.dtype not in (D.int64, D.int32, D.int16, D.int8, D.uint8):
        raise RuntimeError(f"{op}: expected scalar type Long for the class-index target but found "
                           f"{target.dtype} (target {desc(target)}); class-probability targets must have the input's "
                           f"shape and floating dtype")
    return target if target.dtype is D.int64 else target.to(D.int64)


def _not_differentiable(t, fn, name):
    """PyTorch's refusal, under grad mode, of a tensor argument its function has no gradient for."""
    if t is not None and _state.grad.enabled and t.requires_grad:
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument '{name}'. This input "
                           "cannot have requires_grad True.")


def _check_weight(op, weight, C):
    if weight is not None and (weight.dim() != 1 or weight.shape[0] != C):
        raise RuntimeError(f"{op}: weight tensor should be defined either for all {C} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")


@_amp_policy("nll_loss")
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None, ignore_index: int = -100,
             reduce=None, reduction: str = "mean") -> Tensor:
    """-input[target] (weighted, ``ignore_index`` left out; 'mean' divides by the total weight)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    check_tensor(input, "nll_loss")
    check_tensor(target, "nll_loss", "target")
    target = _check_target("nll_loss", target)
    x, t, tshape = _class_layout("nll_loss", input, target)
    C = x.shape[1]
    _check_weight("nll_loss", weight, C)
    _not_differentiable(weight, "nll_loss_forward", "weight")
    # out-of-range targets raise IndexError in the op itself (its kernel or its gather), which
    # spares every training step a device-to-host check of the targets
    r = _nnops.nll_loss(x, t, weight, reduction, ignore_index)
    return r.reshape(tshape) if reduction == "none" else r


@host_step
def _check_unit_interval(input, target):
    with _state.grad_disabled():  # "0 <= x <= 1" as PyTorch's check: NaN is refused too
        if input.numel() and not bool(((input >= 0) & (input <= 1)).all()):
            raise RuntimeError("binary_cross_entropy: all elements of input should be between 0 and 1")
        if target.numel() and not bool(((target >= 0) & (target <= 1)).all()):
            raise RuntimeError("binary_cross_entropy: all elements of target should be between 0 and 1")


@host_step
def _check_nonnegative_var(var):
    with _state.grad_disabled():
        if bool((var < 0).any()):
            raise ValueError("var has negative entry/entries")


@host_step
def _check_classes(op, t, C, ignore_index):
    if t.numel() == 0:
        return
    valid = t[t != ignore_index] if ignore_index is not None else t
    if valid.numel():
        lo, hi = int(valid.min()), int(valid.max())
        if lo < 0 or hi >= C:
            raise IndexError(f"{op}: Target {hi if hi >= C else lo} is out of bounds (the input has {C} classes).")


@_amp_policy("cross_entropy")
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                  ignore_index: int = -100, reduce=None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """log_softmax over dim 1 followed by NLL; ``target`` holds class indices (N, *) or class
    probabilities (the input's shape); ``label_smoothing`` mixes in the uniform distribution."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    check_tensor(input, "cross_entropy")
    check_tensor(target, "cross_entropy", "target")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    cdim = 0 if input.dim() == 1 else 1
    C = input.shape[cdim]
    _check_weight("cross_entropy", weight, C)
    logp = _nnops.log_softmax(input, cdim)
    if target.dtype.category == D._FLOAT:
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(f"cross_entropy: class-probability targets must have the input's shape, got target "
                               f"{desc(target)} for input {desc(input)}")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / C
        prod = logp * target
        if weight is not None:
            prod = prod * weight.reshape((C,) + (1,) * (input.dim() - 1 - cdim))
        loss = -prod.sum(cdim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // C if C else 0)
        return reduce_loss(loss, reduction, "cross_entropy")
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing == 0:
        return nll
    target = _check_target("cross_entropy", target)
    ignore = target == ignore_index
    if weight is not None:
        smooth = -(logp * weight.reshape((C,) + (1,) * (input.dim() - 1 - cdim))).sum(cdim)
    else:
        smooth = -logp.sum(cdim)
    smooth = smooth.masked_fill(ignore, 0.0)
    if reduction == "mean":
        if weight is not None:
            tw = weight.index_select(0, target.masked_fill(ignore, 0).reshape(-1)).reshape(target.shape)
            ret = smooth.sum() / tw.masked_fill(ignore, 0.0).sum()
        else:
            ret = smooth.sum() / (~ignore).sum()
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return nll * (1 - label_smoothing) + ret * (label_smoothing / C)


@_amp_policy("binary_cross_entropy")
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """-(t log x + (1 - t) log(1 - x)) for probabilities x (logs clamped at -100, as PyTorch)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_tensor(input, "binary_cross_entropy")
    check_tensor(target, "binary_cross_entropy", "target")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) "
                         "is deprecated. Please ensure they have the same size.")
    _not_differentiable(weight, "binary_cross_entropy", "weight")
    _check_unit_interval(input, target)
    loss = _nnops.binary_cross_entropy(input, target)
    if weight is not None:
        loss = loss * weight
    return reduce_loss(loss, reduction, "binary_cross_entropy")


@_amp_policy("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid + binary cross-entropy in one stable formula; ``pos_weight`` weighs positive examples."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_tensor(input, "binary_cross_entropy_with_logits")
    check_tensor(target, "binary_cross_entropy_with_logits", "target")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    soft = -logsigmoid(input)  # log(1 + exp(-x)), with the gradient -sigmoid(-x) everywhere (0.5 at 0)
    if pos_weight is not None:
        lw = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + lw * soft
    else:
        loss = (1 - target) * input + soft
    if weight is not None:
        loss = loss * weight
    return reduce_loss(loss, reduction, "binary_cross_entropy_with_logits")


@_amp_policy("kl_div")
def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """Pointwise KL divergence with ``input`` as log-probabilities (and ``target`` too with ``log_target``);
    'batchmean' divides the sum by the batch size (the mathematically correct mean)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_tensor(input, "kl_div")
    check_tensor(target, "kl_div", "target")
    if log_target:
        loss = _ops.exp(target) * (target - input)
    else:
        loss = _ops.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    return reduce_loss(loss, reduction, "kl_div")


@_amp_policy("poisson_nll_loss")
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False, size_average=None,
                     eps: float = 1e-8, reduce=None, reduction: str = "mean") -> Tensor:
    """Poisson negative log likelihood: exp(x) - t x (log_input) or x - t log(x + eps)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_tensor(input, "poisson_nll_loss")
    if log_input:
        loss = _ops.exp(input) - target * input
    else:
        loss = input - target * _ops.log(input + eps)
    if full:
        stirling = target * _ops.log(target) - target + 0.5 * _ops.log(2 * math.pi * target)
        loss = loss + _ops.where(target > 1, stirling, 0.0)
    return reduce_loss(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """0.5 (log var + (x - t)^2 / var) (+ 0.5 log 2 pi with ``full``); ``var`` is clamped at ``eps``
    without blocking its gradient, as PyTorch."""
    check_tensor(input, "gaussian_nll_loss")
    if not isinstance(var, Tensor):
        var = _factory.full(input.shape, float(var), dtype=input.dtype, device=input.device)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    check_reduction(reduction)
    _check_nonnegative_var(var)
    v = var + (var.clamp_min(eps) - var).detach()
    loss = 0.5 * (_ops.log(v) + (input - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction, "gaussian_nll_loss")


@_amp_policy("cosine_embedding_loss")
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, size_average=None,
                          reduce=None, reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) for target 1, max(0, cos - margin) for target -1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or tuple(input1.shape) != tuple(input2.shape):
        raise RuntimeError(f"cosine_embedding_loss: input1 {desc(input1)} and input2 {desc(input2)} must have the "
                           "same shape")
    d = input1.dim() - 1
    EPS = 1e-12
    prod = (input1 * input2).sum(d)
    m1 = (input1 * input1).sum(d) + EPS
    m2 = (input2 * input2).sum(d) + EPS
    cos = prod / _ops.sqrt(m1 * m2)
    pos = 1 - cos
    neg = (cos - margin).clamp_min(0.0)
    loss = _ops.where(target == 1, pos, 0.0) + _ops.where(target == -1, neg, 0.0)
    return reduce_loss(loss, reduction, "cosine_embedding_loss")


@_amp_policy("margin_ranking_loss")
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:
    """max(0, -y (x1 - x2) + margin)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    loss = (-target * (input1 - input2) + margin).clamp_min(0.0)
    return reduce_loss(loss, reduction, "margin_ranking_loss")


@_amp_policy("hinge_embedding_loss")
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean") -> Tensor:
    """x for target 1, max(0, margin - x) for target -1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    margin_clamp = (margin - input).clamp_min(0.0)
    loss = _ops.where(target != 1, margin_clamp, 0.0) + _ops.where(target != -1, input, 0.0)
    return reduce_loss(loss, reduction, "hinge_embedding_loss")


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                                reduce=None, reduction: str = "mean") -> Tensor:
    """Per-class logistic loss averaged over classes (multi-label targets in {0, 1})."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input.dim() == 0:  # the classes are the last dim
        raise IndexError("multilabel_soft_margin_loss: Dimension specified as -1 but tensor has no dimensions")
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.dim() - 1) / input.shape[-1]
    return reduce_loss(loss, reduction, "multilabel_soft_margin_loss")


@_amp_policy("multilabel_margin_loss")
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """Multi-class multi-label hinge loss; ``target`` lists class indices, ending at the first -1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    x = input if input.dim() == 2 else input.unsqueeze(0)
    t = (target if target.dim() == 2 else target.unsqueeze(0)).to(D.int64)
    N, C = x.shape
    # a target is valid up to (not including) the first -1
    is_end = (t < 0).to(D.int64).cumsum(1) > 0
    valid = ~is_end
    safe = t.masked_fill(is_end, 0)
    member = _factory.zeros((N, C), dtype=x.dtype, device=x.device).scatter_add(
        1, safe, valid.to(x.dtype)).clamp_max(1.0)
    xt = x.gather(1, safe)  # (N, S)
    # (N, S, C): 1 - x_target + x_j (in PyTorch's order), for valid targets and non-target classes
    z = (1 - xt.unsqueeze(2)) + x.unsqueeze(1)
    loss = _hinge(z, valid.unsqueeze(2) & (member == 0).unsqueeze(1)).sum((1, 2)) / C
    if input.dim() == 1:
        loss = loss.squeeze(0)
    return reduce_loss(loss, reduction, "multilabel_margin_loss")


@_amp_policy("multi_margin_loss")
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss: sum_{j != y} max(0, margin - x_y + x_j)^p / C."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input if input.dim() == 2 else input.unsqueeze(0)
    t = (target if target.dim() == 1 else target.reshape(1)).to(D.int64)
    N, C = x.shape
    _check_classes("multi_margin_loss", t, C, None)
    _not_differentiable(weight, "multi_margin_loss", "weight")
    xy = x.gather(1, t.unsqueeze(1))
    notself = _factory.arange(C, device=x.device) != t.unsqueeze(1)
    z = margin - xy + x
    h = z * z if p == 2 else z
    if weight is not None:
        h = h * weight.index_select(0, t).unsqueeze(1)
    loss = _hinge(z, notself, h).sum(1) / C
    if input.dim() == 1:
        loss = loss.squeeze(0)
    return reduce_loss(loss, reduction, "multi_margin_loss")


def _hinge(z, terms, h=None):
    """``h`` (default ``z``) where z > 0 and ``terms`` (bool) holds, else 0: the skipped terms add
    nothing (even NaN, inf - inf or 0 * an infinite weight), with PyTorch's margin-loss gradient,
    none at z = 0 (where clamp passes one). A NaN z stays NaN (PyTorch's kernels skip it, which
    hides it)."""
    return _ops.where(terms & ~(z <= 0), z if h is None else h, 0.0)


@_amp_policy("soft_margin_loss")
def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """log(1 + exp(-y x))."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _not_differentiable(target, "soft_margin_loss", "target")
    shape = _ops.broadcast_shapes(tuple(input.shape), tuple(target.shape))
    if shape != tuple(input.shape):  # the loss has the input's shape, as PyTorch's kernel output
        raise RuntimeError(f"soft_margin_loss: output with shape {list(input.shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")
    loss = -logsigmoid(target * input)  # log(1 + exp(-y x)), stable, with the right gradient at 0
    return reduce_loss(loss, reduction, "soft_margin_loss")


@_amp_policy("triplet_margin_loss")
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """max(0, d(a, p) - d(a, n) + margin) with the p-norm distance (``swap`` uses the smaller negative distance)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if not (anchor.dim() == positive.dim() == negative.dim()):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and negative "
                           f"{negative.dim()}D inputs")
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = _ops.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    loss = (margin + d_ap - d_an).clamp_min(0.0)
    return reduce_loss(loss, reduction, "triplet_margin_loss")


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *, distance_function=None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """Triplet loss with a custom distance (default: pairwise_distance)."""
    dist = distance_function if distance_function is not None else pairwise_distance
    d_ap = dist(anchor, positive)
    d_an = dist(anchor, negative)
    if swap:
        d_an = _ops.minimum(d_an, dist(positive, negative))
    loss = (margin + d_ap - d_an).clamp_min(0.0)
    return reduce_loss(loss, reduction, "triplet_margin_with_distance_loss")


def _safe_log(s):
    pos = s > 0
    return _ops.where(pos, _ops.log(_ops.where(pos, s, 1.0)), float("-inf"))


def _lse3(a, b, c):
    m = _ops.maximum(_ops.maximum(a, b), c).detach()
    m = _ops.where(_ops.isinf(m), 0.0, m)
    return _safe_log(_ops.exp(a - m) + _ops.exp(b - m) + _ops.exp(c - m)) + m


def _lse2(a, b):
    m = _ops.maximum(a, b).detach()
    m = _ops.where(_ops.isinf(m), 0.0, m)
    return _safe_log(_ops.exp(a - m) + _ops.exp(b - m)) + m


def _shift(a, k, fill):
    """``a`` (N, S) moved right by ``k`` along dim 1, ``fill`` coming in."""
    return _nnops.constant_pad_nd(a, (k, -k), fill)


@_amp_policy("ctc_loss")
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist Temporal Classification loss of (T, N, C) log-probabilities against padded
    (N, S) or concatenated 1-d targets; 'mean' divides each loss by its target length first (as
    PyTorch). Computed by the forward algorithm in log space, differentiable by autograd."""
    check_tensor(log_probs, "ctc_loss", "log_probs")
    check_reduction(reduction)
    unbatched = log_probs.dim() == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    if lp.dim() != 3:
        raise RuntimeError(f"ctc_loss: log_probs must be (T, N, C) or (T, C), got {desc(log_probs)}")
    T, N, C = lp.shape
    if not 0 <= blank < C:
        raise RuntimeError(f"ctc_loss: blank must be in label range, got blank={blank} with {C} classes")

    def _lengths(v, what):
        if isinstance(v, Tensor):
            v = v.reshape(-1).tolist()
        elif isinstance(v, int):
            v = [v]
        v = [int(x) for x in v]
        if len(v) != N:
            raise RuntimeError(f"ctc_loss: {what} must have {N} entries (one per batch element), got {len(v)}")
        return v
    in_len = _lengths(input_lengths, "input_lengths")
    tg_len = _lengths(target_lengths, "target_lengths")
    for L in in_len:
        if L > T or L < 0:
            raise RuntimeError(f"ctc_loss: Expected input_lengths to have value at most {T}, but got value {L}")
    tg = targets.to(D.int64)
    if unbatched and tg.dim() == 1 and len(tg_len) == 1 and tg.shape[0] >= tg_len[0]:
        tg = tg.unsqueeze(0) if tg.shape[0] == tg_len[0] else tg[:tg_len[0]].unsqueeze(0)
    if tg.dim() == 2:
        S = tg.shape[1]
        for L in tg_len:
            if L > S:
                raise RuntimeError(f"ctc_loss: Expected tensor to have size at least {L} at dimension 1, but got size "
                                   f"{S} for argument #2 'targets'")
        padded = tg
    else:
        if sum(tg_len) != tg.shape[0]:
            raise RuntimeError(f"ctc_loss: targets of length {tg.shape[0]} don't add up to the target_lengths "
                               f"{tg_len}")
        S = max(tg_len) if tg_len else 0
        rows = []
        start = 0
        for L in tg_len:
            part = tg[start:start + L]
            start += L
            if L < S:
                part = _ops.cat([part, _factory.full((S - L,), blank, dtype=D.int64, device=tg.device)])
            rows.append(part)
        padded = _ops.stack(rows) if rows else _factory.zeros((0, 0), dtype=D.int64, device=tg.device)
    S = max(S, 1)
    if padded.shape[1] < S:
        padded = _ops.cat([padded, _factory.full((N, S - padded.shape[1]), blank, dtype=D.int64, device=tg.device)], 1)
    Sx = 2 * S + 1
    ext = _factory.full((N, Sx), blank, dtype=D.int64, device=tg.device)
    ext[:, 1::2] = padded[:, :S]
    # l'(s) may skip from s-2 when it is a label different from l'(s-2)
    skip = _factory.zeros((N, Sx), dtype=D.bool, device=tg.device)
    if Sx > 2:
        skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    ninf = float("-inf")
    pos = _factory.arange(Sx, device=tg.device).unsqueeze(0)
    tl = _factory.tensor(tg_len, dtype=D.int64, device=tg.device).unsqueeze(1)
    reach = pos <= 2 * tl  # states beyond the target are never valid
    emit = lp.gather(2, ext.unsqueeze(0).expand(T, N, Sx))  # (T, N, Sx)
    alpha = _ops.where(pos < 2, emit[0], ninf)
    alpha = _ops.where(reach, alpha, ninf)
    il = _factory.tensor(in_len, dtype=D.int64, device=tg.device).unsqueeze(1)
    for t in range(1, T):
        a1 = _shift(alpha, 1, ninf)
        a2 = _ops.where(skip, _shift(alpha, 2, ninf), ninf)
        new = _lse3(alpha, a1, a2) + emit[t]
        new = _ops.where(reach, new, ninf)
        alpha = _ops.where(il > t, new, alpha)
    last = alpha.gather(1, (2 * tl).clamp_max(Sx - 1))
    prev = _ops.where(tl > 0, alpha.gather(1, (2 * tl - 1).clamp_min(0)), ninf)
    nll = -_lse2(last, prev).squeeze(1)
    nll = _ops.where(il.squeeze(1) == 0, _ops.where(tl.squeeze(1) == 0, 0.0, float("inf")), nll)
    if zero_infinity:
        nll = _ops.where(_ops.isinf(nll), 0.0, nll)
    if reduction == "mean":
        return (nll / tl.squeeze(1).clamp_min(1).to(nll.dtype)).mean()
    if reduction == "sum":
        return nll.sum()
    return nll.squeeze(0) if unbatched else nll
