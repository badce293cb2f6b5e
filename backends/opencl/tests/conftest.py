import pytest

import ember


@pytest.fixture(scope="session")
def dev():
    """opencl:0 (these tests need an OpenCL device: the tox env installs PoCL)."""
    from ember import _plugins
    be = _plugins.backend_for("opencl")
    ok, reason = be.availability()
    if not ok:
        pytest.fail(f"ember-opencl's tests need an OpenCL device: {reason}", pytrace=False)
    return ember._devices.canonical("opencl:0")


@pytest.fixture(scope="session")
def cd(dev):
    """The runtime device (ember_opencl.runtime.CLDevice) behind opencl:0."""
    return dev._backend.cl(dev)
