"""Differential tests of every op of ``ember.ops.OPS`` against PyTorch 2.13 (see conftest.py for the
example budget and oracle/ for the machinery): values, dtypes, shapes, exceptions and float64
input gradients. A failure prints a runnable repro."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle.known import check, load
from oracle.specs import OP_SPECS

pytestmark = pytest.mark.filterwarnings("ignore")

_SKIPPED = {e["op"] for e in load().get("skipped", [])}


@pytest.mark.parametrize("op", sorted(n for n in OP_SPECS if n not in _SKIPPED))
@settings(settings.get_profile("oracle"))
@given(data=st.data())
def test_op(op, data):
    check(data.draw(OP_SPECS[op], label="call"))
