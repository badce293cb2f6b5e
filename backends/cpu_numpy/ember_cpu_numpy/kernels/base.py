"""What every kernel group is built over: :class:`ArrayNamespace` (an array module and the
adapters between its arrays and ember tensors) and :class:`KernelGroup`."""
from __future__ import annotations


class ArrayNamespace:
    """The small namespace a kernel library computes with (Chainer's ``xp`` idea).

    * ``xp``: numpy, or a module mirroring it (cupy);
    * ``nd(t)``: the ``xp`` array viewing tensor ``t`` (no copy); it must return ``t._native``
      when that is set and the storage's ``backend_state`` is None (the hottest kernels read
      that cache themselves, and call ``nd`` otherwise);
    * ``wrap(a, device)``: a new tensor owning array ``a`` (a kernel's result);
    * ``special``: a ``scipy.special``-like module (``erf``, ``erfc``, ``erfinv``), or None;
    * ``strided(a, shape, strides)``: a strided view of ``a`` (default
      ``xp.lib.stride_tricks.as_strided``; cpu_numpy's is read-only).
    """

    __slots__ = ("xp", "nd", "wrap", "special", "strided")

    def __init__(self, xp, nd, wrap, special=None, strided=None):
        self.xp, self.nd, self.wrap, self.special = xp, nd, wrap, special
        self.strided = strided if strided is not None else xp.lib.stride_tricks.as_strided

    def __repr__(self) -> str:
        return f"<ArrayNamespace over {getattr(self.xp, '__name__', type(self.xp).__name__)}>"


class KernelGroup:
    """The kernels of one concept over an :class:`ArrayNamespace`. An instance serves one array
    module; :meth:`table` maps op names to its kernels (bound methods, or closures for families
    of ops that differ by one ufunc). A backend reusing the library with another array module
    instantiates the groups with its namespace and overrides what differs, in a subclass or
    with ``{**table, **overrides}``."""

    def __init__(self, ns: ArrayNamespace):
        self.ns = ns
        self.xp, self.nd, self.wrap = ns.xp, ns.nd, ns.wrap

    def table(self) -> dict:
        """op name -> kernel."""
        raise NotImplementedError
