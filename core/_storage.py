"""``UntypedStorage``: one flat buffer on one device, owned by a backend."""
from __future__ import annotations


class UntypedStorage:
    """A flat buffer of ``nbytes`` bytes on ``device``.

    ``_data`` is the backend's own object (a numpy array for ``cpu_numpy``, a ``cl.Buffer`` for
    ``opencl``...); a backend may rebind it (a copy-on-write backend must, see docs/backends.md).
    ``backend_state`` is the backend's own slot (None at creation; the core never reads it).
    Views share the storage object itself, so ``x.view(9).untyped_storage() is
    x.untyped_storage()``.
    """

    __slots__ = ("_data", "_nbytes", "_device", "backend_state", "__weakref__")

    def __init__(self, data, nbytes: int, device):
        self._data = data
        self._nbytes = nbytes
        self._device = device
        self.backend_state = None

    def nbytes(self) -> int:
        return self._nbytes

    def size(self) -> int:
        return self._nbytes

    def __len__(self) -> int:
        return self._nbytes

    @property
    def device(self):
        return self._device

    def data_ptr(self) -> int:
        return self._device._backend.data_ptr(self)

    def share_memory_(self) -> "UntypedStorage":
        """Move this storage into shared memory, in place (every tensor and view over it stays
        valid); nothing when it is shared already. Backends without shared memory raise
        RuntimeError. numpy arrays taken from its tensors before the move keep the old memory."""
        self._device._backend.share_memory_(self)
        return self

    def is_shared(self) -> bool:
        return bool(self._device._backend.is_shared(self))

    def element_size(self) -> int:
        return 1

    def __repr__(self) -> str:
        return f"ember.UntypedStorage(nbytes={self._nbytes}, device={self._device})"
