"""Recurrent layers: ``RNN`` (tanh / relu), ``LSTM`` (with ``proj_size``), ``GRU`` and their
single-step cells, with PyTorch's parameter names, shapes, gate order and initialisation, so a
PyTorch state dict loads one to one and gives the same outputs.

Each layer and direction runs as one fused op of :mod:`ember.ops.nn.recurrent` (the input
projection of every time step is one ``linear`` before it), so a layer records one autograd
node. Packed sequences run padded inside, with ``batch_sizes`` telling the op which rows are real.
"""
from __future__ import annotations

import math
import numbers
import warnings

from ...ops import creation as _factory
from ..._tensor import Tensor
from ...ops import nn as _nnops
from ...ops import cat, stack
from ...ops._args import desc
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, packed_to_padded_index, padded_to_packed_index
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _permute(h: Tensor, perm) -> Tensor:
    return h if perm is None else h.index_select(1, perm)


class RNNBase(Module):
    """The shared machinery of :class:`RNN`, :class:`LSTM` and :class:`GRU` (``mode`` is one of
    ``'RNN_TANH'``, ``'RNN_RELU'``, ``'LSTM'``, ``'GRU'``)."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__()
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          UserWarning, stacklevel=3)
        for name, v in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(v, bool):
                raise TypeError(f"{name} should be of type bool, got: {type(v).__name__}")
        for name, v in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"{name} should be of type int, got: {type(v).__name__}")
            if v <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        config = {"mode": mode, "input_size": input_size, "hidden_size": hidden_size, "num_layers": num_layers,
                  "bias": bias, "batch_first": batch_first, "dropout": float(dropout),
                  "bidirectional": bidirectional, "proj_size": proj_size}
        for attr, value in config.items():
            setattr(self, attr, value)
        gate_size = _GATES[mode] * hidden_size
        D = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        fk = {"device": device, "dtype": dtype}
        # parameter names in registration order, flat and grouped per (layer, direction)
        self._flat_weights_names, self._all_weights = [], []
        for layer, direction in ((n, d) for n in range(num_layers) for d in range(D)):
            layer_in = input_size if layer == 0 else real_hidden * D
            shapes = [("weight_ih", (gate_size, layer_in)), ("weight_hh", (gate_size, real_hidden))]
            if bias:
                shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
            if proj_size > 0:
                shapes.append(("weight_hr", (proj_size, hidden_size)))
            sfx = "_reverse" if direction == 1 else ""
            names = []
            for base, shape in shapes:
                name = f"{base}_l{layer}{sfx}"
                setattr(self, name, Parameter(_factory.empty(shape, **fk)))
                names.append(name)
            self._flat_weights_names.extend(names)
            self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """No-op (cuDNN packs its weights into one buffer; ember's ops take them as they are)."""

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        """The parameters per layer and direction: ``[[w_ih, w_hh, b_ih, b_hh(, w_hr)], ...]``."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward --------------------------------------------------------------------------------
    def _name(self) -> str:
        return type(self).__name__

    def _real_hidden(self) -> int:
        return self.proj_size if self.proj_size > 0 else self.hidden_size

    def _prepare(self, input):
        """(x (T, B, I), batch_sizes tuple or None, sorted/unsorted indices, is_batched, packed geometry)."""
        name = self._name()
        w0 = getattr(self, self._flat_weights_names[0])
        if isinstance(input, PackedSequence):
            data = input.data
            self._check_input(data, w0, 2)
            bsz = tuple(int(v) for v in input.batch_sizes.tolist())
            B = bsz[0]
            N = data.shape[0]
            zero = _factory.zeros((1, data.shape[1]), dtype=data.dtype, device=data.device)
            x = cat([data, zero], 0).index_select(0, packed_to_padded_index(bsz, data.device, N))
            x = x.reshape(len(bsz), B, data.shape[1])
            return x, bsz, input.sorted_indices, input.unsorted_indices, True
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}.forward(): input must be a Tensor or a PackedSequence, not "
                            f"{type(input).__name__}")
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D tensor instead "
                             f"(input {desc(input)})")
        batched = input.dim() == 3
        x = input
        if not batched:
            x = x.unsqueeze(1)
        elif self.batch_first:
            x = x.transpose(0, 1)
        self._check_input(x, w0, 3)
        if x.shape[0] == 0:
            raise RuntimeError(f"{name}: Expected sequence length to be larger than 0 in RNN (input {desc(input)})")
        return x, None, None, None, batched

    def _check_input(self, x: Tensor, w0: Tensor, ndim: int) -> None:
        name = self._name()
        if x.dtype is not w0.dtype:
            raise ValueError(f"{name}: input dtype ({x.dtype}) does not match weight dtype ({w0.dtype}). Convert "
                             f"input: input.to({w0.dtype}), or convert model: model.to({x.dtype})")
        if x.dim() != ndim:
            raise RuntimeError(f"{name}: input must have {ndim} dimensions, got {x.dim()} ({desc(x)})")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"{name}: input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {x.shape[-1]} (input {desc(x)})")
        if x.device != w0.device:
            raise RuntimeError(f"{name}: input is on {x.device} but the module's parameters are on {w0.device}; "
                               f"move one of them (module.to({str(x.device)!r}))")

    def _check_hidden(self, h: Tensor, expected: tuple, batched: bool, what: str = "hidden size") -> Tensor:
        name = self._name()
        if not isinstance(h, Tensor):
            raise TypeError(f"{name}.forward(): hx must be a Tensor, not {type(h).__name__}")
        if batched and h.dim() != 3:
            raise RuntimeError(f"{name}: For batched 3-D input, hx should also be 3-D but got {h.dim()}-D tensor")
        if not batched:
            if h.dim() != 2:
                raise RuntimeError(f"{name}: For unbatched 2-D input, hx should also be 2-D but got {h.dim()}-D "
                                   "tensor")
            h = h.unsqueeze(1)
        if tuple(h.shape) != expected:
            raise RuntimeError(f"{name}: Expected {what} {expected}, got {list(h.shape)}")
        w0 = getattr(self, self._flat_weights_names[0])
        if h.dtype is not w0.dtype:
            raise ValueError(f"{name}: hx dtype ({h.dtype}) does not match weight dtype ({w0.dtype})")
        return h

    def _hidden_shapes(self, B: int) -> tuple:
        LD = self.num_layers * (2 if self.bidirectional else 1)
        return (LD, B, self._real_hidden()), (LD, B, self.hidden_size)

    def _run(self, x: Tensor, h0: Tensor, c0, bsz):
        """All layers over padded ``x`` (T, B, I): (out (T, B, D*P), h_n, c_n or None)."""
        D = 2 if self.bidirectional else 1
        mode = self.mode
        hns, cns = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(D):
                names = self._all_weights[layer * D + d]
                ws = [getattr(self, n) for n in names]
                w_ih, w_hh = ws[0], ws[1]
                b_ih, b_hh = (ws[2], ws[3]) if self.bias else (None, None)
                w_hr = ws[-1] if self.proj_size > 0 else None
                k = layer * D + d
                rev = d == 1
                if mode == "GRU":
                    xg = F.linear(x, w_ih, b_ih)
                    o, hn = _nnops.gru_layer(xg, h0[k], w_hh, b_hh, bsz, rev)
                else:
                    xg = F.linear(x, w_ih, None if b_ih is None else b_ih + b_hh)
                    if mode == "LSTM":
                        o, hn, cn = _nnops.lstm_layer(xg, h0[k], c0[k], w_hh, w_hr, bsz, rev)
                        cns.append(cn)
                    else:
                        o, hn = _nnops.rnn_layer(xg, h0[k], w_hh, bsz, rev, mode == "RNN_RELU")
                hns.append(hn)
                outs.append(o)
            x = outs[0] if D == 1 else cat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, stack(hns, 0), (stack(cns, 0) if cns else None)

    def _forward_impl(self, input, hx, is_lstm: bool):
        x, bsz, sorted_i, unsorted_i, batched = self._prepare(input)
        B = x.shape[1]
        hshape, cshape = self._hidden_shapes(B)
        if hx is None:
            h0 = _factory.zeros(hshape, dtype=x.dtype, device=x.device)
            c0 = _factory.zeros(cshape, dtype=x.dtype, device=x.device) if is_lstm else None
        elif is_lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError(f"{self._name()}.forward(): hx must be a tuple (h_0, c_0), not {type(hx).__name__}")
            if batched and (hx[0].dim() != 3 or hx[1].dim() != 3):
                raise RuntimeError(f"{self._name()}: For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            if not batched and (hx[0].dim() != 2 or hx[1].dim() != 2):
                raise RuntimeError(f"{self._name()}: For unbatched 2-D input, hx and cx should also be 2-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            h0 = _permute(self._check_hidden(hx[0], hshape, batched), sorted_i)
            c0 = _permute(self._check_hidden(hx[1], cshape, batched, "hidden[1] size"), sorted_i)
        else:
            h0 = _permute(self._check_hidden(hx, hshape, batched), sorted_i)
            c0 = None
        out, hn, cn = self._run(x, h0, c0, bsz)
        if bsz is not None:
            T = out.shape[0]
            data = out.reshape(T * B, out.shape[2]).index_select(0, padded_to_packed_index(bsz, B, out.device))
            output = PackedSequence(data, input.batch_sizes, sorted_i, unsorted_i)
            hn = _permute(hn, unsorted_i)
            cn = None if cn is None else _permute(cn, unsorted_i)
        elif not batched:
            output = out.squeeze(1)
            hn = hn.squeeze(1)
            cn = None if cn is None else cn.squeeze(1)
        else:
            output = out.transpose(0, 1) if self.batch_first else out
        return output, ((hn, cn) if is_lstm else hn)

    def forward(self, input, hx=None):
        return self._forward_impl(input, hx, self.mode == "LSTM")


def _refuse_projection(kwargs) -> None:
    if "proj_size" in kwargs:
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` with ``act`` tanh or relu
    (``nonlinearity``). ``forward(input, h_0=None) -> (output, h_n)``.

    >>> out, h = ember.nn.RNN(4, 8, num_layers=2)(ember.randn(5, 3, 4))
    >>> out.shape, h.shape
    (ember.Size([5, 3, 8]), ember.Size([2, 3, 8]))
    """

    def __init__(self, *args, **kwargs) -> None:
        _refuse_projection(kwargs)
        # nonlinearity is RNN's fourth positional parameter (after num_layers), absent from RNNBase
        rest = list(args)
        nonlinearity = rest.pop(3) if len(rest) > 3 else kwargs.pop("nonlinearity", "tanh")
        mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU" if nonlinearity == "relu" else None
        if mode is None:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, *rest, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory, PyTorch's gates (i, f, g, o) and optional projection (``proj_size``:
    ``h_t = W_hr (o_t * tanh(c_t))``). ``forward(input, (h_0, c_0)=None) -> (output, (h_n, c_n))``.

    >>> out, (h, c) = ember.nn.LSTM(4, 8, batch_first=True)(ember.randn(3, 5, 4))
    >>> out.shape, h.shape, c.shape
    (ember.Size([3, 5, 8]), ember.Size([1, 3, 8]), ember.Size([1, 3, 8]))
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit, PyTorch's gates (r, z, n) with ``b_hn`` inside the reset product:
    ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, ``h' = (1 - z) * n + z * h``.
    ``forward(input, h_0=None) -> (output, h_n)``."""

    def __init__(self, *args, **kwargs) -> None:
        _refuse_projection(kwargs)
        super().__init__("GRU", *args, **kwargs)


# -- cells ----------------------------------------------------------------------------------------

class RNNCellBase(Module):
    """Parameters ``weight_ih`` (G*H, I), ``weight_hh`` (G*H, H), ``bias_ih``, ``bias_hh`` (G*H,),
    all ~ U(-1/sqrt(H), 1/sqrt(H))."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        rows = num_chunks * hidden_size
        shapes = {"weight_ih": (rows, input_size), "weight_hh": (rows, hidden_size), "bias_ih": (rows,),
                  "bias_hh": (rows,)}
        for name, shape in shapes.items():
            wanted = bias or not name.startswith("bias")
            value = Parameter(_factory.empty(shape, device=device, dtype=dtype)) if wanted else None
            self.register_parameter(name, value)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def _input(self, input: Tensor) -> tuple:
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}.forward(): input must be a Tensor, not {type(input).__name__}")
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if x.shape[1] != self.input_size:
            raise RuntimeError(f"{name}: input has inconsistent input_size: got {x.shape[1]} expected "
                               f"{self.input_size} (input {desc(input)})")
        if x.dtype is not self.weight_ih.dtype:
            raise ValueError(f"{name}: input dtype ({x.dtype}) does not match weight dtype ({self.weight_ih.dtype})")
        return x, batched

    def _hidden(self, h, x: Tensor, batched: bool, what: str = "hx", idx: str = "0") -> Tensor:
        name = type(self).__name__
        if h is None:
            return _factory.zeros((x.shape[0], self.hidden_size), dtype=x.dtype, device=x.device)
        if not isinstance(h, Tensor):
            raise TypeError(f"{name}.forward(): {what} must be a Tensor, not {type(h).__name__}")
        if h.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {h.dim()}D instead")
        if (h.dim() == 2) != batched:
            raise RuntimeError(f"{name}: {what} must be {2 if batched else 1}-D for a {2 if batched else 1}-D "
                               f"input, got {desc(h)}")
        h = h if batched else h.unsqueeze(0)
        if h.shape[0] != x.shape[0]:
            raise RuntimeError(f"{name}: Input batch size {x.shape[0]} doesn't match hidden{idx} batch size "
                               f"{h.shape[0]}")
        if h.shape[1] != self.hidden_size:
            raise RuntimeError(f"{name}: hidden{idx} has inconsistent hidden_size: got {h.shape[1]}, expected "
                               f"{self.hidden_size}")
        if h.dtype is not x.dtype:
            raise ValueError(f"{name}: {what} dtype ({h.dtype}) does not match input dtype ({x.dtype})")
        return h

    def _xg(self, x: Tensor, fold_bias: bool) -> Tensor:
        b = self.bias_ih
        if fold_bias and b is not None:
            b = b + self.bias_hh
        return F.linear(x, self.weight_ih, b).unsqueeze(0)


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = act(W_ih x + b_ih + W_hh h + b_hh)``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, batched = self._input(input)
        h = self._hidden(hx, x, batched)
        out, _ = _nnops.rnn_layer(self._xg(x, True), h, self.weight_hh, None, False, self.nonlinearity == "relu")
        out = out[0]
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: ``forward(input, (h, c)=None) -> (h', c')`` with PyTorch's gates (i, f, g, o)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:
        x, batched = self._input(input)
        if hx is None:
            h = c = self._hidden(None, x, batched)
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError(f"LSTMCell.forward(): hx must be a tuple (h, c), not {type(hx).__name__}")
            h = self._hidden(hx[0], x, batched, "hx[0]", "0")
            c = self._hidden(hx[1], x, batched, "hx[1]", "1")
        _, hn, cn = _nnops.lstm_layer(self._xg(x, True), h, c, self.weight_hh, None, None, False)
        return (hn, cn) if batched else (hn.squeeze(0), cn.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: ``r, z = sig(...)``, ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``,
    ``h' = (1 - z) * n + z * h``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, batched = self._input(input)
        h = self._hidden(hx, x, batched)
        _, hn = _nnops.gru_layer(self._xg(x, False), h, self.weight_hh, self.bias_hh, None, False)
        return hn if batched else hn.squeeze(0)
