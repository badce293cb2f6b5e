import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # for the test backend's lazy loader string


@pytest.fixture
def primitives_device():
    """The device of a backend that implements only the primitives, registered for one test."""
    import ember
    from ember.testing import registered_plugin
    from rmsnorm_primitives_backend import PrimitivesOnlyPlugin
    with registered_plugin(PrimitivesOnlyPlugin(), name="rmsnorm-primitives-test"):
        yield ember.device("rmsprim")
