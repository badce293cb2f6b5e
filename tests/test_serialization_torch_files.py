"""Files written by real ``torch.save`` (``tests/fixtures/torch/``, made by ``make_fixtures.py``)
load with ember.load, with PyTorch not imported: state dicts, optimizer state, a checkpoint dict,
every dtype, views sharing storage, nested containers, Parameters, a cuda-saved file."""
import collections
import json
import os
import pickle
import sys

import numpy as np
import pytest

import ember

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "torch")
META = json.load(open(os.path.join(HERE, "expected.json")))["files"]
EXPECTED = dict(np.load(os.path.join(HERE, "expected.npz")))


def fixture(name):
    return os.path.join(HERE, f"{name}.pt")


def walk(obj, path=""):
    if isinstance(obj, ember.Tensor):
        yield path, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from walk(v, f"{path}/{k}" if path else str(k))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from walk(v, f"{path}/{i}" if path else str(i))


def check_file(name, obj):
    """Every tensor of fixture ``name`` has torch's dtype, geometry, flags and exact values."""
    meta = META[name]
    found = dict(walk(obj))
    assert set(found) == set(meta["tensors"]), name
    for path, t in found.items():
        m = meta["tensors"][path]
        assert t.dtype is getattr(ember, m["dtype"]), path
        assert list(t.shape) == m["shape"] and list(t.stride()) == m["stride"], path
        assert t.storage_offset() == m["offset"] and t.requires_grad == m["requires_grad"], path
        exp = EXPECTED[f"{name}/{path}"]
        got = t.detach()._host()
        if t.dtype is ember.bfloat16:
            got = got.view(np.uint16)
        assert got.dtype == exp.dtype and np.array_equal(got, exp, equal_nan=True), path
    for group in meta["shared"]:
        st = found[group[0]].untyped_storage()
        assert all(found[p].untyped_storage() is st for p in group), group


def test_torch_is_not_needed(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)    # any `import torch` would now raise ImportError
    for name in ("state_dict", "optimizer", "nested", "views"):
        check_file(name, ember.load(fixture(name)))


@pytest.mark.parametrize("name", ["state_dict", "optimizer", "checkpoint", "dtypes", "views", "nested", "dtypes_small"])
def test_fixture_loads_with_exact_values(name):
    check_file(name, ember.load(fixture(name)))


def test_state_dict_is_an_ordered_dict_of_plain_tensors():
    sd = ember.load(fixture("state_dict"))
    assert type(sd) is collections.OrderedDict
    assert list(sd) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                        "1.num_batches_tracked", "3.weight", "3.bias"]
    assert sd["1.num_batches_tracked"].dtype is ember.int64 and sd["1.num_batches_tracked"].item() == 2
    assert hasattr(sd, "_metadata")   # PyTorch's per-module versions ride along as an attribute


def test_optimizer_state_layout():
    st = ember.load(fixture("optimizer"))
    assert sorted(st) == ["param_groups", "state"]
    assert sorted(st["state"]) == list(range(6))
    assert sorted(st["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    assert st["state"][0]["step"].item() == 2.0
    group = META["optimizer"]["param_groups"][0]
    got = st["param_groups"][0]
    assert got["betas"] == (0.8, 0.99) and got["lr"] == group["lr"] and got["params"] == group["params"]
    assert {k: v for k, v in got.items() if k != "betas"} == {k: v for k, v in group.items() if k != "betas"}


def test_checkpoint_dict():
    ck = ember.load(fixture("checkpoint"))
    assert sorted(ck) == ["epoch", "loss", "model_state_dict", "optimizer_state_dict"]
    assert ck["epoch"] == META["checkpoint"]["epoch"]
    assert ck["loss"].shape == () and ck["loss"].dtype is ember.float32


def test_nested_values_and_parameters():
    nd = ember.load(fixture("nested"))
    assert nd["size"] == ember.Size([2, 3]) and type(nd["size"]) is ember.Size
    assert nd["dtype"] is ember.bfloat16 and nd["device"] == ember.device("cpu")
    assert nd["plain"] == {"int": 3, "float": 0.5, "str": "ember", "none": None, "bytes": b"\x00\xffab", "bool": True,
                           "set": {1, 2, 3}, "tuple": (1, "x"), "complex": 1 + 2j}
    assert type(nd["od"]) is collections.OrderedDict and list(nd["od"]) == ["b", "a"]
    assert nd["param"].requires_grad and nd["param"].is_leaf
    assert not nd["frozen"].requires_grad
    param_cls = getattr(ember.nn, "Parameter", None) if _has_nn() else None
    if param_cls is not None:
        assert isinstance(nd["param"], param_cls) and isinstance(nd["frozen"], param_cls)


def _has_nn():
    try:
        import ember.nn  # noqa: F401
        return True
    except ImportError:
        return False


def test_views_keep_torchs_geometry_and_sharing():
    v = ember.load(fixture("views"))
    assert v["t"].stride() == (1, 6) and v["flat_slice"].storage_offset() == 5
    v["base"][1, 2] = 100.0
    assert v["rows"][0, 2].item() == 100.0 and v["col"][1].item() == 100.0 and v["t"][2, 1].item() == 100.0


def test_cuda_saved_file_needs_map_location():
    with pytest.raises(RuntimeError, match=r"cuda_saved\.pt.*saved on device 'cuda:0'(.|\n)*map_location='cpu'"):
        ember.load(fixture("cuda_saved"))
    d = ember.load(fixture("cuda_saved"), map_location="cpu")
    check_file("dtypes_small", d)
    d = ember.load(fixture("cuda_saved"), map_location={"cuda:0": "cpu"})
    assert d["w"].device.type == "cpu"
    d = ember.load(fixture("cuda_saved"), map_location=lambda storage, loc: storage)
    assert d["w"].device.type == "cpu" and d["b"].dtype is ember.bfloat16


def test_legacy_format_is_refused_with_advice():
    with pytest.raises(RuntimeError, match=r"legacy\.pt.*legacy \(pre-1\.6\) format"):
        ember.load(fixture("legacy"))


def test_torch_files_are_weights_only_safe_and_whole_torch_objects_are_explained(tmp_path):
    # a torch file that pickles a whole torch module: its layers are ember's (torch.nn.modules.linear.Linear
    # is ember.nn.modules.linear.Linear), allowed by weights_only=False or add_safe_globals
    import io
    import zipfile
    with zipfile.ZipFile(fixture("state_dict")) as z:
        prefix = z.namelist()[0].split("/")[0]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(f"{prefix}/data.pkl", b"\x80\x02ctorch.nn.modules.linear\nLinear\nq\x00)\x81q\x01.")
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=r"torch\.nn\.modules\.linear\.Linear(.|\n)*add_safe_globals"
                                                     r"\(\[ember\.nn\.modules\.linear\.Linear\]\)(.|\n)*state_dict"):
        ember.load(buf)
    buf.seek(0)
    assert type(ember.load(buf, weights_only=False)) is ember.nn.Linear
    buf.seek(0)
    with ember.serialization.safe_globals([ember.nn.Linear]):
        assert type(ember.load(buf)) is ember.nn.Linear
    # a torch object ember has no counterpart for: refused with the state_dict advice
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(f"{prefix}/data.pkl", b"\x80\x02ctorch.nn.modules.lazy\nLazyModuleMixin\nq\x00)\x81q\x01.")
    for wo in (True, False):
        buf.seek(0)
        with pytest.raises(pickle.UnpicklingError, match=r"torch\.nn\.modules\.lazy\.LazyModuleMixin(.|\n)*state_dict"):
            ember.load(buf, weights_only=wo)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(f"{prefix}/data.pkl", b"\x80\x02ctorch\ncomplex32\nq\x00.")
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="torch.complex32, which ember does not support"):
        ember.load(buf)
