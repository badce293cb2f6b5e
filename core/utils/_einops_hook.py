"""Makes einops know ember tensors without the user importing anything: einops looks for backends
only among the ``AbstractBackend`` subclasses already defined, so :mod:`ember.utils.einops_backend`
must be imported before einops meets an ember tensor, and it can't be imported before einops is.

:func:`install` (called by ``import ember``) imports it at once when einops is already imported;
otherwise it puts a finder on ``sys.meta_path`` that, when ``einops`` is imported, lets the
normal finders find it and imports the backend module right after einops's own code ran. The
finder removes itself at that point; a process that never imports einops pays nothing.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

__all__ = ["install"]

BACKEND = "ember.utils.einops_backend"


class _AfterEinops(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "einops":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _import_backend()

        spec.loader.exec_module = exec_module  # this spec's own loader instance
        return spec


def _import_backend() -> None:
    try:
        importlib.import_module(BACKEND)
    except ImportError as e:  # an einops without the backend mechanism ember knows: einops itself still works
        warnings.warn(f"einops can't take ember tensors: {e}", RuntimeWarning, stacklevel=2)


def install() -> None:
    """Import the einops backend now if einops is imported, else when it is."""
    mod = sys.modules.get("einops", False)
    if mod is None:  # imports of einops are blocked
        return
    if mod is not False:
        _import_backend()
    elif not any(isinstance(f, _AfterEinops) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterEinops())
