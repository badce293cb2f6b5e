"""The data file of the PyTorch oracle (known_differences.toml): every op of ``ember.ops.OPS`` and
every function of ``ember.nn.functional`` is either drawn by the oracle or skipped with a reason;
each deliberate difference is stated in docs/differences.md (and each oracle marker there has its
entry); and each pending bug's repro runs as ``xfail(strict=False)`` (the summary says which now
pass: delete their lines)."""
from __future__ import annotations

import pathlib
import re

import pytest

import ember
import ember.nn.functional as F
from oracle.known import check, load, parse_repro
from oracle.specs import FUNCTIONAL_SPECS, OP_SPECS

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "differences.md"
_DATA = load()


def _functional_names():
    return {n for n in dir(F) if not n.startswith("_") and callable(getattr(F, n))}


def test_every_op_is_drawn_or_skipped_with_a_reason():
    skipped = {e["op"]: e["reason"] for e in _DATA["skipped"]}
    assert all(r.strip() for r in skipped.values())
    core = {n for n, op in ember.ops.OPS.items() if not op.plugin}  # plugins' ops are theirs to test
    missing = sorted(core - set(OP_SPECS) - set(skipped))
    assert not missing, f"ops neither drawn by the oracle nor skipped in known_differences.toml: {missing}"
    fmissing = sorted(n for n in _functional_names() - set(FUNCTIONAL_SPECS) if f"nn.functional.{n}" not in skipped)
    assert not fmissing, f"nn.functional functions neither drawn nor skipped: {fmissing}"
    stale = sorted(op for op in skipped if op not in ember.ops.OPS
                   and op.removeprefix("nn.functional.") not in _functional_names())
    assert not stale, f"skipped entries naming nothing: {stale}"
    both = sorted(op for op in skipped if op in OP_SPECS
                  or (op.startswith("nn.functional.") and op.removeprefix("nn.functional.") in FUNCTIONAL_SPECS))
    assert not both, f"skipped and drawn at once: {both}"


def test_each_difference_is_in_the_docs_and_each_marker_has_an_entry():
    text = DOCS.read_text()
    markers = set(re.findall(r"<!-- oracle: ([\w-]+) -->", text))
    ids = {e["id"] for e in _DATA["difference"]}
    assert markers == ids, f"only in docs/differences.md: {markers - ids}; only in the data file: {ids - markers}"
    bullets = {m.group(2): m.group(1) for m in re.finditer(r"(?ms)^- (.*?)<!-- oracle: ([\w-]+) -->", text)}
    for e in _DATA["difference"]:
        assert e["reason"].strip() and e["doc"].strip()
        assert " ".join(e["doc"].split()) in " ".join(bullets[e["id"]].split()), (
            f"difference {e['id']}: {e['doc']!r} is not in its bullet of docs/differences.md")
        op = e["op"]
        assert op == "*" or op in ember.ops.OPS or op.removeprefix("nn.functional.") in _functional_names()


def test_pending_entries_are_well_formed():
    ids = [e["id"] for e in _DATA["pending"]]
    assert len(ids) == len(set(ids)), "duplicate pending ids"
    for e in _DATA["pending"]:
        assert e["op"] == parse_repro(e).op


@pytest.mark.parametrize("entry", [pytest.param(e, id=e["id"], marks=pytest.mark.xfail(strict=False, reason=e["op"]))
                                   for e in _DATA["pending"]])
def test_pending_bug(entry):
    """Fails while the bug is there; an XPASS means it is fixed: delete the entry's line."""
    check(parse_repro(entry), pending=False)
