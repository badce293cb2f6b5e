"""Fused neural-network ops, one module per family: activations (softmax, log_softmax and
relu's gradient), losses (nll_loss), the dense layer (linear), padding and sliding windows,
convolution (im2col / col2im, convolution, its transpose and gradients), pooling,
normalisation (batch / layer norm), sparse lookups (embedding), dropout, and the fused
recurrent layers (RNN, LSTM, GRU).

Each op is declared once with a decomposition into other ember ops (so it runs on every
backend) and a backward formula written in ember ops (so double backward works everywhere); a
backend may register a fused kernel under the op's name and kernel arguments (cpu_numpy does).
The front ends are thin and mostly internal: ``ember.nn.functional`` validates the user's
arguments (names, shapes, PyTorch's messages) and calls them. ``softmax``, ``log_softmax`` and
``dropout`` are public (``ember.softmax``, ``Tensor.softmax``... as in PyTorch).

Conventions: spatial ops work on ``(N, C, *spatial)`` tensors with one int per spatial dim for
``kernel``, ``stride``, ``padding``, ``dilation`` (tuples, already normalised by the caller);
their geometry comes from :mod:`ember.backend.shapes`, which the backends' kernels use too.
"""
from __future__ import annotations

# (in this order: it is the order of the ops in OPS)
from . import activation, loss, dense, padding, conv, pooling, normalization, sparse, regularization, recurrent
from .activation import *  # noqa: F401,F403
from .regularization import *  # noqa: F401,F403

# the internal fronts other modules call (ember.nn.functional, nn.RNN..., relu's backward)
from .activation import threshold_backward
from .conv import col2im, conv_transpose, convolution, im2col
from .dense import linear
from .loss import binary_cross_entropy, nll_loss
from .normalization import batch_norm, layer_norm
from .padding import constant_pad_nd
from .pooling import avg_pool, max_pool
from .recurrent import gru_layer, lstm_layer, rnn_layer
from .regularization import fused_dropout
from .sparse import embedding

__all__ = ["dropout", "log_softmax", "softmax"]
