"""``ember.version``, as ``torch.version``: ember's version and the PyTorch API it follows.

``ember.version.__version__`` is ``ember.__version__``; ``ember.version.torch_api`` is the
PyTorch release (``"major.minor"``) whose documented behaviour ember implements, the version a
program written for PyTorch can compare with what it needs.
"""
from ._version import TORCH_API as torch_api
from ._version import __version__

__all__ = ["__version__", "torch_api"]
