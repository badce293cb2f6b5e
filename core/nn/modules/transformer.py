"""The Transformer family with PyTorch's submodule names (``self_attn``, ``linear1``, ``dropout``,
``linear2``, ``norm1``..., ``multihead_attn``, ``layers.0....``), so checkpoints load one to one:
``TransformerEncoderLayer``, ``TransformerDecoderLayer``, ``TransformerEncoder``,
``TransformerDecoder`` and ``Transformer``."""
from __future__ import annotations

import copy
from typing import Callable

from ...ops import creation as _factory
from ... import _dtype as D
from ... import _hoststep
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from .activation import GELU, ReLU
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder", "TransformerDecoder",
           "Transformer"]


def _activation(activation) -> Callable:
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    if not callable(activation):
        raise RuntimeError(f"activation should be relu/gelu or a callable, not {activation!r}")
    return activation


def _is_relu_or_gelu(act) -> int:
    if act is F.relu or isinstance(act, ReLU):
        return 1
    if act is F.gelu or isinstance(act, GELU):
        return 2
    return 0


def _get_clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
    dtype = D.float32 if dtype is None else dtype
    return _factory.full((sz, sz), float("-inf"), dtype=dtype, device=device).triu(1)


def _detect_is_causal_mask(mask, is_causal, size) -> bool:
    """PyTorch's rule: ``is_causal=None`` means "check whether ``mask`` is the causal mask"."""
    make_causal = is_causal is True
    # (a capture of ember.compile does not read the mask: the explicit mask gives the same values)
    if is_causal is None and mask is not None and not _hoststep.capturing():
        sz = size if size is not None else mask.shape[-2]
        causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
        if tuple(mask.shape) == tuple(causal.shape):
            make_causal = bool((mask == causal).all().item())
    return make_causal


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual connection and LayerNorm
    (after the residual; before it with ``norm_first``). ``forward(src, src_mask=None,
    src_key_padding_mask=None, is_causal=False)``.

    >>> layer = ember.nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, batch_first=True)
    >>> layer(ember.randn(2, 7, 16)).shape
    ember.Size([2, 7, 16])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **fk)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **fk)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **fk)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation_relu_or_gelu = _is_relu_or_gelu(activation if not isinstance(activation, str)
                                                        else _activation(activation))
        self.activation = _activation(activation)

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "activation"):
            self.activation = F.relu

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over ``memory``, then a feed-forward block, each with a residual
    and LayerNorm. ``forward(tgt, memory, tgt_mask=None, memory_mask=None,
    tgt_key_padding_mask=None, memory_key_padding_mask=None, tgt_is_causal=False,
    memory_is_causal=False)``."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias, **fk)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                                 **fk)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **fk)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **fk)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def __setstate__(self, state):
        if "activation" not in state:
            state["activation"] = F.relu
        super().__setstate__(state)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` (``layers.0``, ``layers.1``...) and an
    optional final ``norm``. ``enable_nested_tensor`` and ``mask_check`` are accepted (ember has
    no nested tensors; padded positions are computed and masked)."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        seq_len = None
        if src.dim() == 3:
            first = self.layers[0] if len(self.layers) else None
            bf = bool(first is not None and first.self_attn.batch_first)
            seq_len = src.shape[1] if bf else src.shape[0]
        causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        out = src
        for mod in self.layers:
            out = mod(out, src_mask=mask, is_causal=causal, src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            out = self.norm(out)
        return out


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer`` and an optional final ``norm``."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        seq_len = None
        if tgt.dim() == 3 and len(self.layers):
            seq_len = tgt.shape[1] if self.layers[0].self_attn.batch_first else tgt.shape[0]
        causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        out = tgt
        for mod in self.layers:
            out = mod(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            out = self.norm(out)
        return out


class Transformer(Module):
    """The encoder-decoder of "Attention Is All You Need" (PyTorch's ``nn.Transformer``): an
    ``encoder`` and a ``decoder``, each ending in a LayerNorm; every parameter of 2+ dims is
    xavier-uniform initialised. ``forward(src, tgt, src_mask, tgt_mask, memory_mask,
    src_key_padding_mask, tgt_key_padding_mask, memory_key_padding_mask, src_is_causal,
    tgt_is_causal, memory_is_causal)``."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation: str | Callable = "relu",
                 custom_encoder: Module | None = None, custom_decoder: Module | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False, norm_first: bool = False,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            batch_first, norm_first, bias, **fk)
            self.encoder = TransformerEncoder(layer, num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            batch_first, norm_first, bias, **fk)
            self.decoder = TransformerDecoder(layer, num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        batched = src.dim() == 3
        bdim = 0 if self.batch_first else 1
        if batched and src.shape[bdim] != tgt.shape[bdim]:
            raise RuntimeError(f"the batch number of src and tgt must be equal (src {tuple(src.shape)}, tgt "
                               f"{tuple(tgt.shape)}, batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(f"the feature number of src and tgt must be equal to d_model={self.d_model} (src "
                               f"{tuple(src.shape)}, tgt {tuple(tgt.shape)})")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """A (sz, sz) float mask: 0 on and below the diagonal, -inf above (position i sees j <= i)."""
        return _generate_square_subsequent_mask(sz, device, dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
