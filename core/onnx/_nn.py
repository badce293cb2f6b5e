"""The nn layers' fused ops as ONNX nodes: linear, convolution, pooling, layer norm, softmax,
embedding, padding, and the recurrent layers (one ONNX LSTM / GRU / RNN node per layer and
direction, the gates reordered from PyTorch's to ONNX's).

The recurrent ops receive the input projection ``x W_ih^T + b_ih`` already made (a traced
``linear``), so the node's ``W`` is a permutation matrix that reorders the gates, ``R`` is
``W_hh`` with its rows reordered, and the hidden bias goes into ``B`` (GRU) or is folded into the
projection (LSTM, RNN)."""
from __future__ import annotations

import numpy as np

from ._graph import Graph, host
from .errors import UnsupportedOperatorError

__all__: list = []


def _bias(g, b):
    return [g.inp(b)] if b is not None else []


def _linear(g: Graph, args, out):
    x, w, b = args
    nx = g.inp(x)
    if x.dim() == 2:
        r = g.node("Gemm", [nx, g.inp(w)] + _bias(g, b), transB=1)
    else:
        r = g.node("MatMul", [nx, g.node("Transpose", [g.inp(w)], perm=[1, 0])])
        if b is not None:
            r = g.node("Add", [r, g.inp(b)])
    g.bind(out, r, [nx])


def _pads(padding):
    return list(padding) * 2


def _convolution(g, args, out):
    x, w, b, stride, padding, dilation, groups = args
    nx = g.inp(x)
    if isinstance(padding, str):
        raise UnsupportedOperatorError(f"ember.onnx.export: convolution with padding={padding!r}{g.where()}")
    r = g.node("Conv", [nx, g.inp(w)] + _bias(g, b), strides=list(stride), pads=_pads(padding),
               dilations=list(dilation), group=groups, kernel_shape=list(w._shape[2:]))
    g.bind(out, r, [nx])


def _conv_transpose(g, args, out):
    x, w, b, stride, padding, output_padding, dilation, groups = args
    nx = g.inp(x)
    r = g.node("ConvTranspose", [nx, g.inp(w)] + _bias(g, b), strides=list(stride), pads=_pads(padding),
               output_padding=list(output_padding), dilations=list(dilation), group=groups,
               kernel_shape=list(w._shape[2:]))
    g.bind(out, r, [nx])


def _max_pool(g, args, out):
    x, kernel, stride, padding, dilation, ceil_mode = args
    nx = g.inp(x)
    r = g.node("MaxPool", [nx], kernel_shape=list(kernel), strides=list(stride), pads=_pads(padding),
               dilations=list(dilation), ceil_mode=int(ceil_mode))
    g.bind(out[0], r, [nx])  # the indices (flat per plane in ember, per tensor in ONNX) are not mapped


def _avg_pool(g, args, out):
    x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override = args
    if divisor_override is not None:
        raise UnsupportedOperatorError(f"ember.onnx.export: avg_pool with divisor_override{g.where()}")
    nx = g.inp(x)
    r = g.node("AveragePool", [nx], kernel_shape=list(kernel), strides=list(stride), pads=_pads(padding),
               ceil_mode=int(ceil_mode), count_include_pad=int(count_include_pad))
    g.bind(out, r, [nx])


def _layer_norm(g, args, out):
    x, w, b, k, eps = args
    nx = g.inp(x)
    norm_shape = tuple(x._shape[x.dim() - k:])
    scale = g.inp(w) if w is not None else g.scalar(1, x._dtype.np, norm_shape)
    ins = [nx, scale] + _bias(g, b)
    g.bind(out[0], g.node("LayerNormalization", ins, axis=-k, epsilon=eps), [nx])


def _softmax(op_type):
    def conv(g, args, out):
        x, d = args
        nx = g.inp(x)
        g.bind(out, g.node(op_type, [nx], axis=d), [nx])
    return conv


def _embedding(g, args, out):
    w, idx, padding_idx = args
    ni = g.inp(idx)
    g.bind(out, g.node("Gather", [g.inp(w), ni], axis=0), [ni])


def _constant_pad(g, args, out):
    x, pad, value = args
    nx = g.inp(x)
    n = x.dim()
    begin, end = [0] * n, [0] * n
    for i in range(len(pad) // 2):
        begin[n - 1 - i], end[n - 1 - i] = pad[2 * i], pad[2 * i + 1]
    r = g.node("Pad", [nx, g.ints(begin + end, "pads"), g.scalar(value, x._dtype.np)], mode="constant")
    g.bind(out, r, [nx])


# -- recurrent layers -------------------------------------------------------------------------

def _gate_perm(H: int, blocks) -> np.ndarray:
    return np.concatenate([np.arange(b * H, (b + 1) * H) for b in blocks]).astype(np.int64)


def _identity_w(g, perm, dtype) -> str:
    """``W`` (1, G, G) of an ONNX recurrent node taking the projection ``xg``: row r picks
    column ``perm[r]``, reordering PyTorch's gates into ONNX's."""
    n = len(perm)
    w = np.zeros((1, n, n), dtype=dtype)
    w[0, np.arange(n), perm] = 1
    return g.array(w, "W_gates")


def _r(g, w_hh, perm):
    r = g.node("Gather", [g.inp(w_hh), g.array(perm, "gate_order")], axis=0)
    return g.node("Unsqueeze", [r, g.ints([0], "axes")])


def _state(g, h):
    """``initial_h``/``initial_c`` (1, B, H), or '' for a constant zero state (ONNX's default,
    which follows the batch size at run time)."""
    if not g.traced(h) and not np.any(host(h)):
        return ""
    if h.dim() == 3:
        return g.inp(h)
    return g.node("Unsqueeze", [g.inp(h), g.ints([0], "axes")])


def _check_steps(g, name, xg, batch_sizes):
    if batch_sizes is not None and any(b != xg._shape[1] for b in batch_sizes):
        raise UnsupportedOperatorError(f"ember.onnx.export: {name} over a packed sequence of varying lengths"
                                       f"{g.where()} is not supported; export it with padded input")


def _bind_rnn(g, out, y, yh, yc, nx):
    g.bind(out[0], g.node("Squeeze", [y, g.ints([1], "axes")]), [nx])
    g.bind(out[1], g.node("Squeeze", [yh, g.ints([0], "axes")]), [nx])
    if yc is not None:
        g.bind(out[2], g.node("Squeeze", [yc, g.ints([0], "axes")]), [nx])


def _lstm(g, args, out):
    xg, h0, c0, w_hh, w_hr, batch_sizes, reverse = args
    if w_hr is not None:
        raise UnsupportedOperatorError(f"ember.onnx.export: LSTM with proj_size{g.where()} is not supported")
    _check_steps(g, "LSTM", xg, batch_sizes)
    H = w_hh._shape[1]
    perm = _gate_perm(H, (0, 3, 1, 2))  # PyTorch i f g o -> ONNX i o f c
    nx = g.inp(xg)
    y, yh, yc = g.node("LSTM", [nx, _identity_w(g, perm, xg._dtype.np), _r(g, w_hh, perm), "", "",
                                _state(g, h0), _state(g, c0)], outputs=3, hidden_size=H,
                       direction="reverse" if reverse else "forward")
    _bind_rnn(g, out, y, yh, yc, nx)


def _gru(g, args, out):
    xg, h0, w_hh, b_hh, batch_sizes, reverse = args
    _check_steps(g, "GRU", xg, batch_sizes)
    H = w_hh._shape[1]
    perm = _gate_perm(H, (1, 0, 2))  # PyTorch r z n -> ONNX z r h
    nx = g.inp(xg)
    dt = xg._dtype.np
    if b_hh is not None:
        rb = g.node("Gather", [g.inp(b_hh), g.array(perm, "gate_order")], axis=0)
        b = g.node("Concat", [g.scalar(0, dt, (3 * H,)), rb], axis=0)
        b = g.node("Unsqueeze", [b, g.ints([0], "axes")])
    else:
        b = ""
    y, yh = g.node("GRU", [nx, _identity_w(g, perm, dt), _r(g, w_hh, perm), b, "", _state(g, h0)], outputs=2,
                   hidden_size=H, linear_before_reset=1, direction="reverse" if reverse else "forward")
    _bind_rnn(g, out, y, yh, None, nx)


def _rnn(g, args, out):
    xg, h0, w_hh, batch_sizes, reverse, relu = args
    _check_steps(g, "RNN", xg, batch_sizes)
    H = w_hh._shape[1]
    perm = np.arange(H, dtype=np.int64)
    nx = g.inp(xg)
    y, yh = g.node("RNN", [nx, _identity_w(g, perm, xg._dtype.np), _r(g, w_hh, perm), "", "", _state(g, h0)],
                   outputs=2, hidden_size=H, activations=["Relu" if relu else "Tanh"],
                   direction="reverse" if reverse else "forward")
    _bind_rnn(g, out, y, yh, None, nx)


CONVERTERS = {
    "linear": _linear,
    "convolution": _convolution,
    "conv_transpose": _conv_transpose,
    "max_pool": _max_pool,
    "avg_pool": _avg_pool,
    "layer_norm": _layer_norm,
    "softmax": _softmax("Softmax"),
    "log_softmax": _softmax("LogSoftmax"),
    "embedding": _embedding,
    "constant_pad_nd": _constant_pad,
    "lstm_layer": _lstm,
    "gru_layer": _gru,
    "rnn_layer": _rnn,
}
