"""The whole conformance suite on a backend that implements only the primitives: every other
op runs through the core's decompositions."""
import pytest

import ember
from ember.testing.suite.test_01_runtime import *  # noqa: F401,F403
from ember.testing.suite.test_02_views import *  # noqa: F401,F403
from ember.testing.suite.test_02b_storage import *  # noqa: F401,F403
from ember.testing.suite.test_03_primitives import *  # noqa: F401,F403
from ember.testing.suite.test_04_composites import *  # noqa: F401,F403
from ember.testing.suite.test_04b_hypothesis import *  # noqa: F401,F403
from ember.testing.suite.test_04c_bounds import *  # noqa: F401,F403
from ember.testing.suite.test_04d_inplace import *  # noqa: F401,F403
from ember.testing.suite.test_04e_semantics import *  # noqa: F401,F403
from ember.testing.suite.test_04g_spectral import *  # noqa: F401,F403
from ember.testing.suite.test_05_autograd import *  # noqa: F401,F403
from ember.testing.suite.test_06_nn import *  # noqa: F401,F403
from ember.testing.suite.test_06b_nn_sequence import *  # noqa: F401,F403
from ember.testing.suite.test_07_optim import *  # noqa: F401,F403
from ember.testing.suite.test_08_serialization import *  # noqa: F401,F403
from ember.testing.suite.test_09_devices import *  # noqa: F401,F403

ember_backends = ["primitives"]


@pytest.fixture(autouse=True, scope="module")
def _primitives_backend():
    from primitives_backend import PrimitivesPlugin
    name = ember._plugins.register_plugin(PrimitivesPlugin(), name="primitives-suite")
    yield
    ember._plugins.unregister_plugin(name)


def test_backend_has_only_primitives():
    from ember.ops.primitives import PRIMITIVES
    be = ember._devices.canonical("prim")._backend
    assert set(be.kernels) == set(PRIMITIVES)
