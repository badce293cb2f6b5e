"""Tier 4, composites: ops built from the primitives (natively on backends that have a fast
path, by decomposition on the others) against numpy float64 references."""
import pytest

from ember.testing.suite.optable import COMPOSITE_CASES


@pytest.mark.parametrize("case", COMPOSITE_CASES, ids=[c.name for c in COMPOSITE_CASES])
def test_composite(device, case):
    case.run(device)
