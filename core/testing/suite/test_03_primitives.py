"""Tier 3, primitives: every op of ember.ops.primitives against numpy float64 references, on
contiguous and non-contiguous inputs, for every dtype the op supports."""
import pytest

from ember.testing.suite.optable import PRIMITIVE_CASES


@pytest.mark.parametrize("case", PRIMITIVE_CASES, ids=[c.name for c in PRIMITIVE_CASES])
def test_primitive(device, case):
    case.run(device)
