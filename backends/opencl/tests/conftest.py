import pytest

import ember
from ember.backend import backend_for


@pytest.fixture(scope="session")
def backend():
    """The opencl backend (these tests need an OpenCL device: the tox env installs PoCL)."""
    be = backend_for("opencl")
    ok, reason = be.availability()
    if not ok:
        pytest.fail(f"ember-opencl's tests need an OpenCL device: {reason}", pytrace=False)
    return be


@pytest.fixture(scope="session")
def dev(backend):
    """opencl:0."""
    return ember.device("opencl:0")


@pytest.fixture(scope="session")
def cd(backend, dev):
    """The runtime device (ember_opencl.runtime.CLDevice) behind opencl:0."""
    return backend.cl(dev)
