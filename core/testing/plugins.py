"""Registering a plugin object in-process, as if it were installed (tests, notebooks)."""
from __future__ import annotations

import contextlib
from .. import _plugins


@contextlib.contextmanager
def registered_plugin(plugin, name: str | None = None):
    """Register ``plugin`` (a module, class or object whose methods carry ``@ember.hookimpl``)
    for the ``with`` block: its hooks run at once (backends, ops, modules, optimizers,
    collectives; kernels for backends already loaded, and for the others when they load), and
    everything it registered by name is removed afterwards. Yields the plugin's name::

        with ember.testing.registered_plugin(MyBackendPlugin(), name="mine"):
            x = ember.ones(3, device="mydevice")

    Kernels it put into a backend that was already loaded stay there (a backend's kernel table
    has no owner per entry); use a fresh backend, or a new op name, in tests."""
    registered = _plugins.register_plugin(plugin, name=name)
    try:
        yield registered
    finally:
        _plugins.unregister_plugin(registered)
