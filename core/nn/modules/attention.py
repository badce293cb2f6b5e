"""``MultiheadAttention`` with PyTorch's parameters (``in_proj_weight``/``in_proj_bias``, or
``q_proj_weight``/``k_proj_weight``/``v_proj_weight`` when ``kdim``/``vdim`` differ, ``out_proj``,
``bias_k``/``bias_v``) and initialisation, so a PyTorch state dict loads one to one."""
from __future__ import annotations

from ...ops import creation as _factory
from ..._tensor import Tensor
from .. import init
from ..functional._attention import multi_head_attention_forward
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear"]


class MultiheadAttention(Module):
    """Attention from queries to keys/values with ``num_heads`` heads of ``embed_dim // num_heads``.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False) -> (output, weights or None)``; inputs are
    (L, N, E) (``batch_first``: (N, L, E)) or unbatched (L, E). Bool masks: True = masked out
    (PyTorch's convention for this module); float masks are added to the scores. A query whose
    keys are all masked gets zero weights, not NaN (see ``F.scaled_dot_product_attention``).

    >>> mha = ember.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = ember.randn(3, 5, 8)
    >>> out, w = mha(x, x, x)
    >>> out.shape, w.shape
    (ember.Size([3, 5, 8]), ember.Size([3, 5, 5]))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None, dtype=None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        # one packed (3E, E) input projection when queries, keys and values share the width
        packed = self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.dropout, self.batch_first = dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError(f"embed_dim must be divisible by num_heads (got embed_dim={embed_dim}, "
                                 f"num_heads={num_heads})")
        separate = {"q_proj_weight": (embed_dim, embed_dim), "k_proj_weight": (embed_dim, self.kdim),
                    "v_proj_weight": (embed_dim, self.vdim)}
        # registration order (the state dict's): the projections in use first, then the unused ones as None
        if packed:
            layout = [("in_proj_weight", (3 * embed_dim, embed_dim))] + [(name, None) for name in separate]
        else:
            layout = [*separate.items(), ("in_proj_weight", None)]
        layout.append(("in_proj_bias", (3 * embed_dim,) if bias else None))
        for name, shape in layout:
            self.register_parameter(name, None if shape is None else Parameter(_factory.empty(shape, **fk)))
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **fk)
        if add_bias_kv:
            self.bias_k = Parameter(_factory.empty((1, 1, embed_dim), **fk))
            self.bias_v = Parameter(_factory.empty((1, 1, embed_dim), **fk))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """PyTorch's: xavier-uniform projections, zero biases, xavier-normal ``bias_k``/``bias_v``."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple:
        batched = isinstance(query, Tensor) and query.dim() == 3
        if self.batch_first and batched:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        common = dict(training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
                      attn_mask=attn_mask, average_attn_weights=average_attn_weights, is_causal=is_causal)
        if not self._qkv_same_embed_dim:
            out, w = multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
                use_separate_proj_weight=True, q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
                v_proj_weight=self.v_proj_weight, **common)
        else:
            out, w = multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
                **common)
        if self.batch_first and batched:
            out = out.transpose(1, 0)
        return out, w
