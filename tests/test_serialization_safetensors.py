"""ember.utils.safetensors: the safetensors format through the safetensors package's numpy API
(the optional extra ``ember[safetensors]``, installed in the cpu_numpy tox env)."""
import json
import os
import struct

import numpy as np
import pytest
import safetensors.numpy as stnp

import ember
from ember.utils import safetensors as st

DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float16, ember.bfloat16,
          ember.float32, ember.float64]


def _tensors():
    out = {}
    for i, dt in enumerate(DTYPES):
        host = (np.arange(12).reshape(3, 4) - 5) * (i + 1)
        out[dt.name] = ember.tensor(host % 2 == 0) if dt is ember.bool else ember.tensor(host.astype(dt.np))
    out["scalar"] = ember.tensor(1.5)
    out["empty"] = ember.zeros(0, 4)
    return out


def _bits(t):
    return np.ascontiguousarray(t._host()).view(np.uint8).tobytes()


def test_file_roundtrip_every_dtype_and_metadata(tmp_path):
    ts = _tensors()
    path = tmp_path / "m.safetensors"
    st.save_file(ts, path, metadata={"step": "10"})
    back = st.load_file(path)
    assert sorted(back) == sorted(ts)
    for k, t in ts.items():
        assert back[k].dtype is t.dtype and back[k].shape == t.shape and _bits(back[k]) == _bits(t), k
    with st.safe_open(path, framework="pt") as f:
        assert f.metadata() == {"step": "10"} and sorted(f.keys()) == sorted(ts)
        assert f.get_tensor("float32").tolist() == ts["float32"].tolist()
        sl = f.get_slice("int64")
        assert sl.get_shape() == [3, 4] and sl.get_dtype() == "I64"
        assert sl[1:, :2].tolist() == ts["int64"][1:, :2].tolist()
    assert not [n for n in os.listdir(tmp_path) if n != "m.safetensors"]   # no temporary left


def test_bytes_roundtrip_including_bfloat16():
    ts = _tensors()
    back = st.load(st.save(ts))
    for k, t in ts.items():
        assert back[k].dtype is t.dtype and _bits(back[k]) == _bits(t), k


def test_loaded_tensors_are_writable_and_independent_of_the_file(tmp_path):
    path = tmp_path / "w.safetensors"
    st.save_file({"w": ember.zeros(3)}, path)
    w = st.load_file(path)["w"]
    w[0] = 5.0
    assert w.tolist() == [5.0, 0.0, 0.0] and st.load_file(path)["w"].tolist() == [0.0, 0.0, 0.0]


def test_interoperates_with_the_safetensors_package(tmp_path):
    path = tmp_path / "np.safetensors"
    stnp.save_file({"a": np.arange(6, dtype=np.float32).reshape(2, 3)}, path)
    assert st.load_file(path)["a"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    st.save_file({"b": ember.arange(4)}, tmp_path / "e.safetensors")
    assert stnp.load_file(tmp_path / "e.safetensors")["b"].tolist() == [0, 1, 2, 3]
    raw = open(tmp_path / "e.safetensors", "rb").read()
    header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
    assert header["b"]["dtype"] == "I64" and header["b"]["shape"] == [4]


def test_views_are_saved_as_their_values_and_overlap_is_refused(tmp_path):
    base = ember.arange(12.0).reshape(3, 4)
    other = ember.arange(6.0).reshape(2, 3)
    st.save_file({"t": other.t(), "row0": base[0], "row2": base[2]}, tmp_path / "v.safetensors")
    back = st.load_file(tmp_path / "v.safetensors")
    assert back["t"].tolist() == other.t().tolist() and back["t"].is_contiguous()
    assert back["row2"].tolist() == [8.0, 9.0, 10.0, 11.0]
    with pytest.raises(RuntimeError, match="'base' and 'col' share memory"):
        st.save_file({"base": base, "col": base[:, 1]}, tmp_path / "x.safetensors")
    assert not (tmp_path / "x.safetensors").exists()


def test_devices(prim_backend, tmp_path):
    path = tmp_path / "d.safetensors"
    st.save_file({"p": ember.arange(3.0, device="prim")}, path)
    back = st.load_file(path, device="prim")
    assert back["p"].device.type == "prim" and back["p"].tolist() == [0.0, 1.0, 2.0]
    assert st.load(st.save(back), device="prim")["p"].device.type == "prim"


def test_bad_arguments_and_files(tmp_path):
    with pytest.raises(TypeError, match="dict"):
        st.save([ember.ones(1)])
    with pytest.raises(TypeError, match="names must be str"):
        st.save({1: ember.ones(1)})
    with pytest.raises(TypeError, match="not a tensor"):
        st.save({"a": np.ones(1)})
    with pytest.raises(TypeError, match="metadata"):
        st.save({"a": ember.ones(1)}, metadata={"n": 1})
    with pytest.raises(ValueError, match="framework"):
        st.safe_open(tmp_path / "x", framework="tf")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{oops")
    with pytest.raises(RuntimeError, match="bad.safetensors"):
        st.load_file(bad)
    with pytest.raises(RuntimeError, match="not a valid safetensors"):
        st.load(b"garbage")
    with pytest.raises(FileNotFoundError):
        st.load_file(tmp_path / "missing.safetensors")


def test_failed_save_keeps_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "keep.safetensors"
    st.save_file({"v": ember.ones(2)}, path)

    def full_disk(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(stnp, "save_file", full_disk)
    with pytest.raises(OSError, match="No space"):
        st.save_file({"v": ember.zeros(2)}, path)
    monkeypatch.undo()
    assert st.load_file(path)["v"].tolist() == [1.0, 1.0]
    assert os.listdir(tmp_path) == ["keep.safetensors"]
