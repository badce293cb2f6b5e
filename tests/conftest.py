import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture
def prim_backend():
    """Registers the primitives-only backend (device type ``prim``) for one test."""
    import ember
    from primitives_backend import PrimitivesPlugin
    name = ember._plugins.register_plugin(PrimitivesPlugin(), name="primitives-test")
    try:
        yield ember.device("prim")
    finally:
        ember._plugins.unregister_plugin(name)
