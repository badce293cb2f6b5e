"""Lookups: ``F.embedding``, ``F.embedding_bag``, ``F.one_hot``."""
from __future__ import annotations

from ... import _dtype as D
from ...ops import creation as _factory
from ... import ops as _ops
from ... import _state
from ..._hoststep import host_step
from ..._tensor import Tensor
from ...ops import nn as _nnops
from ...ops.vmap_hook import hooked
from ._sparse_grad import SparseEmbedding
from ._util import check_tensor, desc

__all__ = ["embedding", "embedding_bag", "one_hot"]


def _check_indices(op, input):
    check_tensor(input, op)
    if input.dtype not in (D.int64, D.int32):
        raise RuntimeError(f"{op}: Expected tensor for argument #1 'indices' to have one of the following "
                           f"scalar types: Long, Int; but got {input.type()} instead (input {desc(input)})")


def _same_device(op, weight, *tensors):
    for t in tensors:
        if t is not None and t.device != weight.device:
            raise RuntimeError(f"{op}: Expected all tensors to be on the same device, but found at least two devices, "
                               f"{weight.device} and {t.device}! (weight {desc(weight)}, {desc(t)})")


def _padding_idx(padding_idx, num):
    if padding_idx is None:
        return None
    if padding_idx > 0:
        if padding_idx >= num:
            raise ValueError(f"Padding_idx must be within num_embeddings (got padding_idx={padding_idx}, "
                             f"num_embeddings={num})")
    elif padding_idx < 0:
        if padding_idx < -num:
            raise ValueError(f"Padding_idx must be within num_embeddings (got padding_idx={padding_idx}, "
                             f"num_embeddings={num})")
        padding_idx = num + padding_idx
    return padding_idx


@host_step
def _check_range(op, idx, num, width=1):
    if idx.numel():
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= num:
            bad = lo if lo < 0 else hi
            # (PyTorch's lookup into a weight of zero-width rows raises RuntimeError, not IndexError)
            raise (IndexError if width else RuntimeError)(
                f"{op}: index {bad} is out of range for an embedding of {num} rows (index out of range in self)")


def _renorm(weight, idx, max_norm, norm_type):
    """Rescale the rows ``idx`` of ``weight`` in place to norm at most ``max_norm`` (as PyTorch)."""
    if idx.numel() == 0 or weight.numel() == 0:  # nothing to rescale (nor to write: weight may be expanded)
        return
    with _state.grad_disabled():
        rows = idx.reshape(-1).unique()
        w = weight.index_select(0, rows)
        n = _ops.norm(w, norm_type, 1, keepdim=True)
        scale = _ops.where(n > max_norm, max_norm / (n + 1e-7), 1.0)
        weight.index_copy_(0, rows, w * scale)


@hooked("embedding")
def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` at the integer ``input`` indices; the ``padding_idx`` row gets no gradient;
    ``max_norm`` renormalises the looked-up rows in place first."""
    _check_indices("embedding", input)
    check_tensor(weight, "embedding", "weight")
    if weight.dim() != 2:
        raise RuntimeError(f"embedding: 'weight' must be 2-D, got {desc(weight)}")
    _same_device("embedding", weight, input)
    num = weight.shape[0]
    padding_idx = _padding_idx(padding_idx, num)
    _check_range("embedding", input, num, weight.shape[1])
    idx = input if input.dtype is D.int64 else input.to(D.int64)
    if max_norm is not None:
        _renorm(weight, idx, max_norm, norm_type)
    if sparse and weight.requires_grad and _state.grad.enabled:
        out = SparseEmbedding.apply(weight, idx, padding_idx)
    else:
        out = _nnops.embedding(weight, idx, padding_idx)
    if scale_grad_by_freq:
        counts = _ops.bincount(idx.reshape(-1), minlength=num).to(out.dtype)
        c = counts.index_select(0, idx.reshape(-1)).reshape(tuple(idx.shape) + (1,))
        out = out / c + (out - out / c).detach()  # same values, gradient divided by the index frequency
    return out


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxes of bags of embeddings: ``input`` (B, L) holds one bag per row, or
    1-d ``input`` with ``offsets`` (bag starts). Empty bags give zeros; ``padding_idx`` entries are
    left out of their bag."""
    _check_indices("embedding_bag", input)
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request.")
    check_tensor(weight, "embedding_bag", "weight")
    _same_device("embedding_bag", weight, input, offsets, per_sample_weights)
    num = weight.shape[0]
    padding_idx = _padding_idx(padding_idx, num)
    idx = input.to(D.int64)
    dev = weight.device
    if idx.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             "fixed length sequences.")
        B, L = idx.shape
        bag = _factory.arange(B, device=dev).repeat_interleave(L) if L else _factory.zeros(0, dtype=D.int64, device=dev)
        flat = idx.reshape(-1)
        psw = per_sample_weights.reshape(-1) if per_sample_weights is not None else None
    elif idx.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        offs = offsets.to(D.int64)
        if offs.numel() and int(offs[0]) != 0:
            raise RuntimeError(f"embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has "
                               f"to start from position 0. However, got {int(offs[0])}")
        flat = idx
        psw = per_sample_weights
        if include_last_offset:
            # the last offset is the number of indices (PyTorch's contract; PyTorch does not check
            # it and averages wrongly when it differs: refuse instead)
            end = int(offs[-1]) if offs.numel() else 0
            if end != flat.numel():
                raise ValueError(f"embedding_bag: with include_last_offset=True the last offset must equal the "
                                 f"number of indices ({flat.numel()}), got {end}")
            offs = offs[:-1]
        B = offs.numel()
        pos = _factory.arange(flat.numel(), device=dev)
        bag = _ops.searchsorted(offs, pos, right=True) - 1
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {idx.dim()}")
    _check_range("embedding_bag", flat, num)
    if max_norm is not None:
        _renorm(weight, flat, max_norm, norm_type)
    emb = embedding(flat, weight, padding_idx, None, norm_type, scale_grad_by_freq)
    keep = None
    if padding_idx is not None:
        keep = (flat != padding_idx).to(emb.dtype)
    D_ = weight.shape[1]
    if mode == "max":
        # a dense (bags, longest bag) layout, -inf where a bag is shorter (or at padding_idx)
        starts = _bag_starts(idx, offsets, include_last_offset)
        ends = starts[1:] + [flat.numel()]  # flat already ends at the last offset
        longest = max([e - s for s, e in zip(starts, ends)] + [1])
        pos = [[min(s + j, max(e - 1, 0)) for j in range(longest)] for s, e in zip(starts, ends)]
        valid = [[s + j < e for j in range(longest)] for s, e in zip(starts, ends)]
        if not pos or flat.numel() == 0:  # no bag, or only empty ones: zeros (in the weight's graph)
            return emb.sum(0, keepdim=True).expand(len(pos), D_) * 1
        pos_t = _factory.tensor(pos, dtype=D.int64, device=dev)
        ok = _factory.tensor(valid, dtype=D.bool, device=dev)
        if keep is not None:
            ok = ok & (flat.index_select(0, pos_t.reshape(-1)).reshape(pos_t.shape) != padding_idx)
        e = emb.index_select(0, pos_t.reshape(-1)).reshape(B, longest, D_)
        return _bag_max(e, ok)
    if psw is not None:
        emb = emb * psw.unsqueeze(1)
    if keep is not None:
        emb = emb * keep.unsqueeze(1)
    z = _factory.zeros((B, D_), dtype=emb.dtype, device=dev)
    s = z.index_add(0, bag, emb)
    if mode == "sum":
        return s
    w = keep if keep is not None else _factory.ones(flat.numel(), dtype=emb.dtype, device=dev)
    cnt = _factory.zeros(B, dtype=emb.dtype, device=dev).index_add(0, bag, w)
    return s / cnt.clamp_min(1.0).unsqueeze(1)


def _bag_max(e, ok):
    """The max of each (bag, column) of ``e`` (B, L, D) over its valid entries ``ok`` (B, L), as
    PyTorch's loop takes it: the first entry, then each one greater than the running max (so a NaN
    counts only in first place, ties go to the first); the gradient goes to that one entry."""
    okd = ok.unsqueeze(2).expand(e.shape)
    with _state.grad_disabled():
        first = okd.to(D.int64).argmax(1, keepdim=True)  # (B, 1, D): the first valid entry
        m = _ops.where(okd & ~e.isnan(), e, float("-inf")).amax(1, keepdim=True)
        cand = okd & (e == m)
        arg = _ops.where(cand.any(1, keepdim=True), cand.to(D.int64).argmax(1, keepdim=True), first)
        arg = _ops.where(e.gather(1, first).isnan(), first, arg)
    r = e.gather(1, arg).squeeze(1)
    return _ops.where(ok.any(1, keepdim=True), r, 0.0)  # an empty bag gives zeros


def _bag_starts(idx, offsets, include_last_offset) -> list:
    if idx.dim() == 2:
        return [i * idx.shape[1] for i in range(idx.shape[0])]
    offs = [int(v) for v in offsets.reshape(-1).tolist()]
    return offs[:-1] if include_last_offset else offs


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot vectors (``(*, num_classes)``) of an int64 tensor of class indices."""
    check_tensor(tensor, "one_hot", "tensor")
    if tensor.dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return _factory.zeros(tuple(tensor.shape) + (num_classes,), dtype=D.int64, device=tensor.device)
    lo, hi = int(tensor.min()), int(tensor.max())
    if lo < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = hi + 1
    elif hi >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    z = _factory.zeros(tuple(tensor.shape) + (num_classes,), dtype=D.int64, device=tensor.device)
    return z.scatter(-1, tensor.unsqueeze(-1), 1)
