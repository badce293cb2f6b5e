"""Packed sequences (``ember.nn.utils.rnn``): a batch of variable-length sequences stored time
step by time step without padding, as PyTorch's ``PackedSequence``, and the helpers that pack,
pad and unpad them.

``data`` holds the rows of step 0 for every sequence, then the rows of step 1 for the sequences
at least 2 long, ...; ``batch_sizes[t]`` (an int64 cpu tensor) is how many sequences have a step
``t``. Sequences are sorted by decreasing length inside; ``sorted_indices`` maps a packed batch
position to the original one and ``unsorted_indices`` back.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Sequence

from ...ops import creation as _factory
from ... import _dtype as D
from ..._tensor import Tensor
from ...ops import cat, stack
from ...ops._args import desc

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpack_sequence", "unpad_sequence"]


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation of ``range(n)`` (None stays None)."""
    if permutation is None:
        return None
    n = permutation.numel()
    out = _factory.empty(n, dtype=D.int64, device=permutation.device)
    return out.scatter_(0, permutation, _factory.arange(n, dtype=D.int64, device=permutation.device))


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """A packed batch of variable-length sequences (see the module docstring). Build it with
    :func:`pack_padded_sequence` or :func:`pack_sequence`, never by hand."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence((data, batch_sizes)) as PyTorch accepts
            data, batch_sizes = data
        if batch_sizes.device.type != "cpu":
            raise ValueError("PackedSequence: batch_sizes should always be on CPU. Instances of PackedSequence "
                             "should never be created manually. They should be instantiated by functions like "
                             "pack_sequence and pack_padded_sequences in nn.utils.rnn.")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> "PackedSequence":
        """``data.to(...)``; the indices follow data's device, ``batch_sizes`` stays on cpu."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        dev = data.device
        si = None if self.sorted_indices is None else self.sorted_indices.to(dev)
        ui = None if self.unsorted_indices is None else self.unsorted_indices.to(dev)
        return type(self)(data, self.batch_sizes, si, ui)

    def cuda(self, *args, **kwargs) -> "PackedSequence":
        return self.to(*(args or ("cuda",)), **kwargs)

    def cpu(self, *args, **kwargs) -> "PackedSequence":
        return self.to("cpu")

    def double(self) -> "PackedSequence":
        return self.to(dtype=D.float64)

    def float(self) -> "PackedSequence":
        return self.to(dtype=D.float32)

    def half(self) -> "PackedSequence":
        return self.to(dtype=D.float16)

    def long(self) -> "PackedSequence":
        return self.to(dtype=D.int64)

    def int(self) -> "PackedSequence":
        return self.to(dtype=D.int32)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


# -- index maps between packed rows and (T, B) padded slots ------------------------------------

def _offsets(batch_sizes: Sequence[int]) -> list:
    off, s = [], 0
    for b in batch_sizes:
        off.append(s)
        s += b
    return off


def packed_to_padded_index(batch_sizes: Sequence[int], device, fill: int) -> Tensor:
    """For each slot t*B + b of a (T, B) padding, the packed row holding it, else ``fill``."""
    B = batch_sizes[0] if batch_sizes else 0
    idx = []
    s = 0
    for b in batch_sizes:
        idx.extend(range(s, s + b))
        idx.extend([fill] * (B - b))
        s += b
    return _factory.tensor(idx, dtype=D.int64, device=device)


def padded_to_packed_index(batch_sizes: Sequence[int], B: int, device, batch_first: bool = False,
                           T: int | None = None) -> Tensor:
    """For each packed row, its slot in a flattened (T, B) (or (B, T) with ``batch_first``) padding."""
    if batch_first:
        idx = [b * T + t for t, bs in enumerate(batch_sizes) for b in range(bs)]
    else:
        idx = [t * B + b for t, bs in enumerate(batch_sizes) for b in range(bs)]
    return _factory.tensor(idx, dtype=D.int64, device=device)


def _lengths_list(lengths, op: str) -> list:
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"{op}: 'lengths' must be a 1D tensor, got {desc(lengths)}")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False, enforce_sorted: bool = True
                         ) -> PackedSequence:
    """Pack a padded batch (T, B, *) (or (B, T, *) with ``batch_first``) of sequences of the given
    ``lengths``. With ``enforce_sorted`` the lengths must be non-increasing; otherwise the batch is
    sorted inside and the permutation kept in the result.

    >>> p = pack_padded_sequence(ember.zeros(3, 2, 4), [3, 1])
    >>> p.batch_sizes.tolist(), p.data.shape
    ([2, 1, 1], ember.Size([4, 4]))
    """
    op = "pack_padded_sequence"
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    L = _lengths_list(lengths, op)
    if input.dim() < 2:
        raise RuntimeError(f"{op}: expected a padded input of at least 2 dims (T, B, *), got {desc(input)}")
    bdim = 0 if batch_first else 1
    B, T = input.shape[bdim], input.shape[1 - bdim]
    if len(L) != B:
        raise RuntimeError(f"{op}: Expected `len(lengths)` to be equal to batch_size, but got {len(L)} "
                           f"(batch_size={B}) for input {desc(input)}")
    if any(v <= 0 for v in L):
        raise RuntimeError(f"{op}: Length of all samples has to be greater than 0, but found an element in "
                           f"'lengths' that is <= 0 (lengths={L})")
    if enforce_sorted:
        if any(L[i] < L[i + 1] for i in range(len(L) - 1)):
            raise RuntimeError(
                f"{op}: `lengths` array must be sorted in decreasing order when `enforce_sorted` is True "
                f"(got {L}). You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                "sidestep this requirement if you do not need ONNX exportability.")
        order = list(range(B))
        sorted_indices = None
    else:
        order = sorted(range(B), key=lambda i: -L[i])  # stable: ties keep their order
        sorted_indices = _factory.tensor(order, dtype=D.int64, device=input.device)
    if max(L) > T:
        raise RuntimeError(f"{op}: a length of {max(L)} is longer than the padded sequences of {desc(input)} "
                           f"(T={T})")
    Ls = [L[i] for i in order]
    batch_sizes = [sum(1 for v in Ls if v > t) for t in range(Ls[0])]
    # packed row (t, j) is padded slot (t, order[j])
    if batch_first:
        idx = [order[j] * T + t for t, bs in enumerate(batch_sizes) for j in range(bs)]
    else:
        idx = [t * B + order[j] for t, bs in enumerate(batch_sizes) for j in range(bs)]
    flat = input.reshape((T * B,) + tuple(input.shape[2:]))
    data = flat.index_select(0, _factory.tensor(idx, dtype=D.int64, device=input.device))
    return PackedSequence(data, _factory.tensor(batch_sizes, dtype=D.int64), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple:
    """Undo :func:`pack_padded_sequence`: ``(padded, lengths)`` with ``padded`` (T, B, *) (or
    (B, T, *)) in the original batch order, padded with ``padding_value`` up to ``total_length``
    steps (default: the longest sequence), and ``lengths`` an int64 cpu tensor."""
    bsz = [int(v) for v in sequence.batch_sizes.tolist()]
    T = len(bsz)
    if total_length is not None:
        if total_length < T:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {T}")
        T_out = int(total_length)
    else:
        T_out = T
    data = sequence.data
    B = bsz[0]
    N = data.shape[0]
    trail = tuple(data.shape[1:])
    pad_row = _factory.full((1,) + trail, padding_value, dtype=data.dtype, device=data.device)
    ext = cat([data, pad_row], 0)
    idx = packed_to_padded_index(bsz, data.device, N).tolist()
    idx.extend([N] * ((T_out - T) * B))
    padded = ext.index_select(0, _factory.tensor(idx, dtype=D.int64, device=data.device)).reshape((T_out, B) + trail)
    lengths = [sum(1 for b in bsz if b > j) for j in range(B)]  # per packed position
    ui = sequence.unsorted_indices
    if ui is not None:
        padded = padded.index_select(1, ui)
        lengths = [lengths[i] for i in ui.tolist()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, _factory.tensor(lengths, dtype=D.int64)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences (L_i, *) into one (max L, B, *) (or (B, max L, *)) tensor, padding each at
    its end (``padding_side='right'``) or start (``'left'``) with ``padding_value``."""
    op = "pad_sequence"
    if padding_side not in ("left", "right"):
        raise ValueError(f"{op}: Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    seqs = list(sequences)
    if not seqs:
        raise RuntimeError(f"{op}: received an empty list of sequences")
    for s in seqs:
        if not isinstance(s, Tensor):
            raise TypeError(f"{op}(): expected a list of Tensors, got {type(s).__name__}")
    trail = tuple(seqs[0].shape[1:])
    for k, s in enumerate(seqs):
        if s.dim() == 0 or tuple(s.shape[1:]) != trail:
            raise RuntimeError(f"{op}: every sequence must be (L, {', '.join(map(str, trail)) or '*'}) like the "
                               f"first, but sequence {k} is {desc(s)}")
    T = max(s.shape[0] for s in seqs)
    rows = []
    for s in seqs:
        n = T - s.shape[0]
        if n:
            fill = _factory.full((n,) + trail, padding_value, dtype=s.dtype, device=s.device)
            s = cat([s, fill], 0) if padding_side == "right" else cat([fill, s], 0)
        rows.append(s)
    return stack(rows, 0 if batch_first else 1)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences (L_i, *) (decreasing lengths unless ``enforce_sorted=False``)."""
    lengths = [int(s.shape[0]) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences (L_i, *) a PackedSequence holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return [padded[i, :n] for i, n in enumerate(lengths.tolist())]


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list:
    """The list of sequences (L_i, *) inside a padded (T, B, *) (or (B, T, *)) batch."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    L = _lengths_list(lengths, "unpad_sequence")
    return [padded_sequences[i, :n] for i, n in enumerate(L)]
