"""Old files keep loading: ``tests/fixtures/ember/ember_format_v1.pt`` was written by ember.save
when ember's own format was the default (ember's rebuild functions in the pickle); ember.load
must read it, with weights_only=True, exactly as it was saved."""
import os
import runpy

import numpy as np

import ember

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "ember")
expected = runpy.run_path(os.path.join(HERE, "make_fixtures.py"))["expected"]


def bits(t):
    return np.ascontiguousarray(t.detach()._host()).view(np.uint8).tobytes()


def same(a, b):
    assert type(a) is type(b)
    assert a.dtype is b.dtype and a.shape == b.shape and a.stride() == b.stride()
    assert a.storage_offset() == b.storage_offset() and bits(a) == bits(b)


def test_the_old_ember_format_loads_as_saved():
    want = expected()
    got = ember.load(os.path.join(HERE, "ember_format_v1.pt"))
    assert set(got) == set(want)
    for name, t in want["dtypes"].items():
        same(got["dtypes"][name], t)
    for k in ("base", "col", "t"):
        same(got["views"][k], want["views"][k])
    st = got["views"]["base"].untyped_storage()
    assert got["views"]["col"].untyped_storage() is st and got["views"]["t"].untyped_storage() is st
    same(got["scalar"], want["scalar"])
    same(got["empty"], want["empty"])
    same(got["noted"], want["noted"])
    assert got["noted"].note == "kept"
    assert list(got["state"]) == ["weight", "bias"] and type(got["state"]).__name__ == "OrderedDict"
    assert isinstance(got["state"]["weight"], ember.nn.Parameter) and got["state"]["weight"].requires_grad
    same(got["state"]["bias"], want["state"]["bias"])
    same(got["two_dtypes"]["f"], want["two_dtypes"]["f"])
    same(got["two_dtypes"]["i"], want["two_dtypes"]["i"])
    assert got["two_dtypes"]["i"].untyped_storage() is got["two_dtypes"]["f"].untyped_storage()
    assert got["values"] == want["values"]
