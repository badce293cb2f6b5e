"""Differential tests of every function of ``ember.nn.functional`` against PyTorch 2.13 (see conftest.py for the
example budget and oracle/ for the machinery): values, dtypes, shapes, exceptions and float64
input gradients. A failure prints a runnable repro."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle.known import check, load
from oracle.specs import FUNCTIONAL_SPECS

pytestmark = pytest.mark.filterwarnings("ignore")

_SKIPPED = {e["op"] for e in load().get("skipped", [])}


@pytest.mark.parametrize("fn", sorted(n for n in FUNCTIONAL_SPECS if f"nn.functional.{n}" not in _SKIPPED))
@settings(settings.get_profile("oracle"))
@given(data=st.data())
def test_functional(fn, data):
    check(data.draw(FUNCTIONAL_SPECS[fn], label="call"))
