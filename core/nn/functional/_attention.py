"""Attention: ``scaled_dot_product_attention`` and ``multi_head_attention_forward``, written in
ember ops (batched matmul + the fused softmax), with PyTorch's arguments and mask semantics.

Masks: for ``scaled_dot_product_attention`` a bool ``attn_mask`` says which keys take part
(True = attend); a float mask is added to the scores. For ``multi_head_attention_forward`` (and
``nn.MultiheadAttention``) bool masks say the opposite, as in PyTorch: True = masked out.

A query row whose keys are all masked out gets zero attention weights (so a zero attention
output) on every path. PyTorch's ``scaled_dot_product_attention`` does the same, but its
``MultiheadAttention`` with ``need_weights=True`` (the default) returns NaN there, which then
poisons the next layer and the gradients; ember does not.
"""
from __future__ import annotations

import math

from ... import _dtype as D
from ...ops import creation as _factory
from ..._tensor import Tensor
from ...ops import amax, baddbmm, bmm, cat, eq, matmul, where
from ...ops._args import desc
from ...ops.nn import softmax as _softmax
from ...ops.autocast import policy as _amp_policy
from ._dropout import dropout as _dropout
from ._conv import linear as _linear
from ._util import check_tensor

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_NEG_INF = float("-inf")


def _safe_softmax(scores: Tensor, masked: bool) -> Tensor:
    """softmax over the last dim; with ``masked``, rows that are entirely -inf give zeros."""
    if not masked:
        return _softmax(scores, -1)
    if scores.numel() == 0:  # (no row to take the max of)
        return _softmax(scores, -1)
    dead = eq(amax(scores, -1, True), _NEG_INF)
    return where(dead, 0.0, _softmax(where(dead, 0.0, scores), -1))


def _float_mask(mask: Tensor, dtype, op: str, true_means_keep: bool) -> Tensor:
    """A bool mask as an additive float mask (0 / -inf); a float mask as it is."""
    if mask.dtype is D.bool:
        keep = mask if true_means_keep else mask.logical_not()
        return where(keep, 0.0, _NEG_INF).to(dtype)
    if mask.dtype.category != D._FLOAT:
        raise TypeError(f"{op}: only bool and floating types of masks are supported, got {desc(mask)}")
    return mask


def _causal_mask(L: int, S: int, dtype, device) -> Tensor:
    keep = _factory.ones((L, S), dtype=D.bool, device=device).tril()
    return where(keep, 0.0, _NEG_INF).to(dtype)


@_amp_policy("scaled_dot_product_attention")
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(q k^T * scale + mask) v`` over (..., L, E) queries, (..., S, E) keys and
    (..., S, Ev) values. ``attn_mask`` broadcasts to (..., L, S): bool (True = take part) or float
    (added). ``is_causal`` masks keys after each query (top-left aligned). ``scale`` defaults to
    1/sqrt(E). ``enable_gqa`` lets the query have a multiple of the key/value heads (dim -3).
    Dropout with ``dropout_p`` is applied to the weights (always, as PyTorch: pass 0 in eval).

    >>> q = ember.randn(2, 4, 5, 8)
    >>> F.scaled_dot_product_attention(q, q, q, is_causal=True).shape
    ember.Size([2, 4, 5, 8])
    """
    op = "scaled_dot_product_attention"
    for nm, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(t, op, nm)
        if t.dim() < 2:
            raise RuntimeError(f"{op}: {nm} must have at least 2 dims (..., L, E), got {desc(t)}")
        if t.dtype.category != D._FLOAT:
            raise RuntimeError(f"{op}: expected floating point inputs, got {nm} {desc(t)}")
    if not (query.dtype is key.dtype is value.dtype):
        raise RuntimeError(f"{op}: Expected query, key, and value to have the same dtype, but got query {desc(query)}, "
                           f"key {desc(key)}, value {desc(value)}")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"{op}: query and key must have the same embedding size (last dim), got query "
                           f"{desc(query)} and key {desc(key)}")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"{op}: key and value must have the same sequence length (dim -2), got key {desc(key)} "
                           f"and value {desc(value)}")
    if is_causal and attn_mask is not None:
        raise RuntimeError(f"{op}: Explicit attn_mask should not be set when is_causal=True")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {dropout_p}")
    L, S = query.shape[-2], key.shape[-2]
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError(f"{op}: with enable_gqa the number of query heads ({hq}) must be a multiple of the "
                               f"key ({hk}) and value ({hv}) heads")
        key = key.repeat_interleave(hq // hk, -3)
        value = value.repeat_interleave(hq // hv, -3)
    E = query.shape[-1]
    s = (1.0 / math.sqrt(E) if E else math.inf) if scale is None else float(scale)  # (E = 0: 1/sqrt(0), as floats)
    scores = matmul(query, key.transpose(-2, -1)) * s
    masked = False
    if is_causal:
        scores = scores + _causal_mask(L, S, scores.dtype, scores.device)
        masked = True
    elif attn_mask is not None:
        check_tensor(attn_mask, op, "attn_mask")
        try:
            scores = scores + _float_mask(attn_mask, scores.dtype, op, True)
        except RuntimeError as e:
            raise RuntimeError(f"{op}: attn_mask {desc(attn_mask)} does not broadcast to the attention weights "
                               f"({', '.join(map(str, scores.shape))})") from e
        masked = True
    w = _safe_softmax(scores, masked)
    if dropout_p > 0.0:
        w = _dropout(w, dropout_p, True)
    return matmul(w, value)


# -- multi-head attention ---------------------------------------------------------------------------

def _in_projection_packed(q, k, v, w, b):
    E = q.shape[-1]
    if k is v:
        if q is k:  # self-attention: one matmul for q, k and v
            return _linear(q, w, b).chunk(3, -1)
        wq, wkv = w[:E], w[E:]
        bq, bkv = (None, None) if b is None else (b[:E], b[E:])
        kv = _linear(k, wkv, bkv).chunk(2, -1)
        return _linear(q, wq, bq), kv[0], kv[1]
    ws = w.chunk(3)
    bs = (None, None, None) if b is None else b.chunk(3)
    return _linear(q, ws[0], bs[0]), _linear(k, ws[1], bs[1]), _linear(v, ws[2], bs[2])


def _check_mha_shapes(op, query, key, value, key_padding_mask, attn_mask, num_heads):
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise RuntimeError(f"{op}: For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                               f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise RuntimeError(f"{op}: For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                               f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise RuntimeError(f"{op}: For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                               f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise RuntimeError(f"{op}: For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                               f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise RuntimeError(f"{op}: For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                               f"but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise RuntimeError(f"{op}: For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                   f"but found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise RuntimeError(f"{op}: Expected `attn_mask` shape to be {expected} but got "
                                       f"{tuple(attn_mask.shape)}")
        return False
    raise AssertionError(f"{op}: query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D "
                         "query tensor")


def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn: bool,
                                 dropout_p: float, out_proj_weight: Tensor, out_proj_bias, training: bool = True,
                                 key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                                 use_separate_proj_weight: bool = False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights: bool = True,
                                 is_causal: bool = False) -> tuple:
    """Multi-head attention over (L, N, E) queries and (S, N, E_k/E_v) keys/values (or unbatched
    (L, E)), PyTorch's ``F.multi_head_attention_forward``: returns ``(output (L, N, E), weights)``
    where weights are (N, L, S) averaged over heads (``average_attn_weights``), (N, heads, L, S)
    otherwise, or None without ``need_weights``. Bool masks: True = masked out."""
    op = "multi_head_attention_forward"
    for nm, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(t, op, nm)
    batched = _check_mha_shapes(op, query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"{op}: was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"{op}: embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2] if use_separate_proj_weight else tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"{op}: key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")
    if key.shape[1] != bsz:
        raise RuntimeError(f"{op}: query {desc(query)} and key {desc(key)} have different batch sizes")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint is trusted: sdpa builds the causal mask itself
    else:
        is_causal = False
    dt = query.dtype
    if attn_mask is not None:
        attn_mask = _float_mask(attn_mask, dt, op, False)
    if key_padding_mask is not None:
        key_padding_mask = _float_mask(key_padding_mask, dt, op, False)

    # input projections
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError(f"{op}: use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError(f"{op}: use_separate_proj_weight is True but q/k/v_proj_weight is None")
        bq, bk, bv = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _linear(query, q_proj_weight, bq), _linear(key, k_proj_weight, bk), _linear(value, v_proj_weight, bv)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError(f"{op}: bias cannot be added to static key/value.")
        k = cat([k, bias_k.expand(1, bsz, embed_dim)], 0)
        v = cat([v, bias_v.expand(1, bsz, embed_dim)], 0)
        attn_mask = None if attn_mask is None else _pad_last(attn_mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError(f"{op}: bias_k and bias_v must both be given or both be None")

    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if tuple(static_k.shape[::2]) != (bsz * num_heads, head_dim):
            raise AssertionError(f"{op}: expecting static_k of shape ({bsz * num_heads}, S, {head_dim}), got "
                                 f"{tuple(static_k.shape)}")
        k = static_k
    if static_v is None:
        v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if tuple(static_v.shape[::2]) != (bsz * num_heads, head_dim):
            raise AssertionError(f"{op}: expecting static_v of shape ({bsz * num_heads}, S, {head_dim}), got "
                                 f"{tuple(static_v.shape)}")
        v = static_v
    if add_zero_attn:
        z = _factory.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k, v = cat([k, z], 1), cat([v, z], 1)
        attn_mask = None if attn_mask is None else _pad_last(attn_mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"{op}: expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0

    if need_weights:
        qs = q * (1.0 / math.sqrt(head_dim))
        kt = k.transpose(-2, -1)
        if attn_mask is not None:
            scores = baddbmm(attn_mask.expand(bsz * num_heads, tgt_len, src_len), qs, kt)
        else:
            scores = bmm(qs, kt)
        w = _safe_softmax(scores, attn_mask is not None)
        if dropout_p > 0.0:
            w = _dropout(w, dropout_p, True)
        out = bmm(w, v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = _linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
        w = w.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            w = w.mean(1)
        if not batched:
            out, w = out.squeeze(1), w.squeeze(0)
        return out, w
    if attn_mask is not None:
        if attn_mask.shape[0] == 1:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not batched:
        out = out.squeeze(1)
    return out, None


def _pad_last(mask: Tensor) -> Tensor:
    """One more key column that takes part (0 added)."""
    z = _factory.zeros(tuple(mask.shape[:-1]) + (1,), dtype=mask.dtype, device=mask.device)
    return cat([mask, z], -1)
