"""Tier 4, composites: ops built from the primitives (natively on backends that have a fast
path, by decomposition on the others) against numpy float64 references, on contiguous,
transposed, sliced and expanded inputs, for every dtype each op supports, gradchecked in
float64 where differentiable (see the op tables ``optable*.py``)."""
import pytest

from ember.testing.suite.optable import COMPOSITE_CASES
from ember.testing.suite.optable_factor import FACTOR_CASES
from ember.testing.suite.optable_linalg import LINALG_CASES
from ember.testing.suite.optable_math import MATH_CASES
from ember.testing.suite.optable_numerics import NUMERICS_CASES
from ember.testing.suite.optable_reduce import REDUCE_CASES
from ember.testing.suite.optable_shape import SHAPE_CASES
from ember.testing.suite.optable_special import SPECIAL_CASES


@pytest.mark.parametrize("case", COMPOSITE_CASES, ids=[c.name for c in COMPOSITE_CASES])
def test_composite(device, case):
    case.run(device)


@pytest.mark.parametrize("case", MATH_CASES, ids=[c.name for c in MATH_CASES])
def test_math(device, case):
    case.run(device)


@pytest.mark.parametrize("case", REDUCE_CASES, ids=[c.name for c in REDUCE_CASES])
def test_reduction(device, case):
    case.run(device)


@pytest.mark.parametrize("case", LINALG_CASES, ids=[c.name for c in LINALG_CASES])
def test_linalg(device, case):
    case.run(device)


@pytest.mark.parametrize("case", FACTOR_CASES, ids=[c.name for c in FACTOR_CASES])
def test_factorizations(device, case):
    case.run(device)


@pytest.mark.parametrize("case", SHAPE_CASES, ids=[c.name for c in SHAPE_CASES])
def test_shape_and_indexing(device, case):
    case.run(device)


@pytest.mark.parametrize("case", NUMERICS_CASES, ids=[c.name for c in NUMERICS_CASES])
def test_numerics(device, case):
    case.run(device)


@pytest.mark.parametrize("case", SPECIAL_CASES, ids=[c.name for c in SPECIAL_CASES])
def test_special(device, case):
    case.run(device)
