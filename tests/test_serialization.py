"""ember.save / ember.load: round trips, the archive format, shared storages, map_location, file
objects and paths, mmap, custom objects with weights_only=False."""
import collections
import io
import pickle
import struct
import sys
import zipfile

import numpy as np
import pytest

import ember
from ember import serialization as S
from ember.serialization import _archive as A

DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float16, ember.bfloat16,
          ember.float32, ember.float64]


def bits(t) -> bytes:
    """The exact bytes of a tensor's values (row-major), for bit-for-bit comparison."""
    a = t.detach()._host()
    return np.ascontiguousarray(a).view(np.uint8).tobytes()


def roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **load_kw)


def same_tensor(a, b) -> None:
    assert isinstance(b, ember.Tensor)
    assert (a.dtype, a.shape, a.stride(), a.storage_offset(), a.requires_grad) == \
        (b.dtype, b.shape, b.stride(), b.storage_offset(), b.requires_grad)
    assert bits(a) == bits(b)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_every_dtype_roundtrips_bit_for_bit(dtype):
    rng = np.random.default_rng(1)
    host = rng.standard_normal((3, 5)) * 50
    if dtype.is_floating_point:
        host[0, 0], host[0, 1] = np.inf, np.nan
    t = ember.tensor(host.astype(dtype.np)) if dtype is not ember.bool else ember.tensor(host > 0)
    back = roundtrip({"t": t})["t"]
    same_tensor(t, back)


def test_scalar_empty_and_noncontiguous_tensors():
    base = ember.arange(24.0).reshape(4, 6)
    obj = {"scalar": ember.tensor(2.5), "empty": ember.zeros(0, 3), "empty_int": ember.zeros(2, 0, dtype=ember.int64),
           "t": base.t(), "strided": base[::2, 1::3], "expanded": ember.ones(1, 3).expand(4, 3)}
    back = roundtrip(obj)
    for k, v in obj.items():
        same_tensor(v, back[k])


def test_views_share_one_storage_after_load_and_it_is_written_once():
    base = ember.arange(20.0).reshape(4, 5)
    obj = {"base": base, "row": base[2], "col": base[:, 1], "tail": base.view(-1)[7:], "other": ember.ones(3)}
    buf = io.BytesIO()
    ember.save(obj, buf)
    names = zipfile.ZipFile(io.BytesIO(buf.getvalue())).namelist()
    assert sorted(n for n in names if "/data/" in n) == ["archive/data/0", "archive/data/1"]
    buf.seek(0)
    back = ember.load(buf)
    st = back["base"].untyped_storage()
    for k in ("row", "col", "tail"):
        assert back[k].untyped_storage() is st
        same_tensor(obj[k], back[k])
    assert back["other"].untyped_storage() is not st
    back["base"][2, 1] = -1.0        # writes through the shared storage, as before saving
    assert back["row"][1].item() == -1.0 and back["col"][2].item() == -1.0


def test_same_tensor_twice_is_one_object_and_a_slice_keeps_the_whole_storage():
    t = ember.arange(10.0)
    back = roundtrip([t, t, t[3:5]])
    assert back[0] is back[1]
    assert back[2].untyped_storage().nbytes() == 40 and back[2].tolist() == [3.0, 4.0]


def test_tensors_of_different_dtypes_viewing_one_storage():
    raw = ember.arange(8, dtype=ember.int32)
    f = ember._tensor._make(raw._storage, (8,), (1,), 0, ember.float32, raw.device)
    back = roundtrip({"i": raw, "f": f})
    assert back["i"].untyped_storage() is back["f"].untyped_storage()
    assert back["i"].tolist() == list(range(8)) and bits(back["f"]) == bits(f)


def test_requires_grad_and_non_leaf_tensors():
    leaf = ember.tensor([1.0, 2.0], requires_grad=True)
    y = leaf * 2
    back = roundtrip({"leaf": leaf, "y": y})
    assert back["leaf"].requires_grad and back["leaf"].is_leaf
    assert back["y"].requires_grad and back["y"].is_leaf and back["y"].grad_fn is None
    assert back["y"].tolist() == [2.0, 4.0]


def test_tensor_attributes_survive():
    t = ember.ones(2)
    t.note = "kept"
    back = roundtrip({"t": t}, weights_only=False)["t"]
    assert back.note == "kept" and back.tolist() == [1.0, 1.0]
    assert roundtrip({"t": t})["t"].note == "kept"   # a str attribute is a plain value: weights_only admits it


def test_containers_and_plain_values():
    obj = collections.OrderedDict(
        a=[1, 2.5, "s", None, True, b"\x00\xff", bytearray(b"xy"), 3 + 4j, (1, (2,)), {1, 2}, frozenset({3}),
           slice(1, 5, 2), collections.Counter("aab")],
        b={"nested": {"deep": [ember.zeros(1)]}}, c=2 ** 70, d=float("inf"))
    back = roundtrip(obj)
    assert type(back) is collections.OrderedDict and list(back) == ["a", "b", "c", "d"]
    assert back["a"] == obj["a"] and back["c"] == 2 ** 70 and back["d"] == float("inf")
    assert back["b"]["nested"]["deep"][0].tolist() == [0.0]


def test_dtypes_devices_and_sizes_as_values():
    obj = {"dt": [ember.bfloat16, ember.int64], "dev": ember.device("cpu"), "dev2": ember.device("cuda", 1),
           "size": ember.zeros(2, 3).shape}
    back = roundtrip(obj)
    assert back["dt"][0] is ember.bfloat16 and back["dt"][1] is ember.int64
    assert back["dev"] == ember.device("cpu") and back["dev2"] == ember.device("cuda:1")
    assert type(back["size"]) is ember.Size and back["size"] == (2, 3)


def test_archive_layout_matches_pytorchs():
    buf = io.BytesIO()
    ember.save({"w": ember.ones(3)}, buf)
    zf = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    names = zf.namelist()
    assert names[0] == "archive/data.pkl"
    assert {"archive/version", "archive/byteorder", "archive/.format_version", "archive/.storage_alignment",
            "archive/data/0"} <= set(names)
    assert zf.read("archive/byteorder") == sys.byteorder.encode()
    assert zf.read("archive/version") == b"3\n"
    assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
    assert zf.read("archive/data/0") == np.ones(3, np.float32).tobytes()


def _globals_of(buf: io.BytesIO) -> set:
    import pickletools
    pk = zipfile.ZipFile(io.BytesIO(buf.getvalue())).read("archive/data.pkl")
    return {arg.replace(" ", ".") for op, arg, _ in pickletools.genops(pk) if op.name == "GLOBAL"}


def test_the_default_file_names_pytorchs_functions_only():
    import ember.nn as nn
    m = nn.Linear(2, 3)
    opt = ember.optim.Adam(m.parameters())
    m(ember.ones(1, 2)).sum().backward()
    opt.step()
    t = ember.arange(4.0)
    t.note = "x"
    buf = io.BytesIO()
    ember.save({"sd": m.state_dict(), "opt": opt.state_dict(), "p": list(m.parameters()), "t": t, "dt": ember.int8,
                "dev": ember.device("cpu"), "size": t.shape, "v": t[1:]}, buf)
    names = _globals_of(buf)
    assert names and all(n.startswith(("torch.", "collections.")) for n in names), names
    assert "torch._utils._rebuild_tensor_v2" in names and "torch._utils._rebuild_parameter" in names
    assert zipfile.ZipFile(buf).read("archive/.data/ember_version") == ember.__version__.encode()
    buf.seek(0)
    back = ember.load(buf)
    assert back["t"].note == "x" and back["v"].untyped_storage() is back["t"].untyped_storage()
    assert type(back["p"][0]) is ember.nn.Parameter and back["dt"] is ember.int8 and type(back["size"]) is ember.Size


def test_what_pytorchs_format_cannot_hold_is_written_in_embers():
    raw = ember.arange(4, dtype=ember.int32)
    f = ember._tensor._make(raw._storage, (4,), (1,), 0, ember.float32, raw.device)   # one storage, two dtypes
    buf = io.BytesIO()
    ember.save([raw, f, ember.ones(2)], buf)
    assert "ember.serialization._rebuild_tensor_from_storage" in _globals_of(buf)
    buf.seek(0)
    back = ember.load(buf)
    assert back[0].tolist() == [0, 1, 2, 3] and back[1].untyped_storage() is back[0].untyped_storage()
    assert bits(back[1]) == bits(f)
    buf = io.BytesIO()
    ember.save([ember.ones(1)], buf, pickle_module=_PickleLike)   # another pickle module: ember's names
    assert "ember.serialization._rebuild_tensor_from_storage" in _globals_of(buf)


class MyTensor(ember.Tensor):
    """A user's Tensor subclass."""


def test_tensor_subclasses_are_written_as_themselves_by_default():
    t = ember.ones(2)
    t.__class__ = MyTensor
    for fmt, cls in ((None, MyTensor), ("ember", MyTensor), ("torch", ember.Tensor)):
        buf = io.BytesIO()
        ember.save({"t": t}, buf, format=fmt)
        buf.seek(0)
        if cls is MyTensor:
            with pytest.raises(pickle.UnpicklingError, match="MyTensor"):
                ember.load(buf)
            buf.seek(0)
        with S.safe_globals([MyTensor]):
            back = ember.load(buf)["t"]
        assert type(back) is cls and back.tolist() == [1.0, 1.0], fmt


def test_records_are_64_byte_aligned():
    buf = io.BytesIO()
    ember.save({f"t{i}": ember.ones(i + 1, dtype=ember.float64) for i in range(7)}, buf)
    raw = buf.getvalue()
    for info in zipfile.ZipFile(io.BytesIO(raw)).infolist():
        n, m = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
        assert (info.header_offset + 30 + n + m) % 64 == 0, info.filename


def test_saving_the_same_object_twice_gives_the_same_bytes():
    obj = {"w": ember.arange(5.0), "n": 3}
    a, b = io.BytesIO(), io.BytesIO()
    ember.save(obj, a)
    ember.save(obj, b)
    assert a.getvalue() == b.getvalue()


def test_paths_pathlib_and_open_files(tmp_path):
    t = ember.arange(6).reshape(2, 3)
    ember.save(t, str(tmp_path / "a.pt"))
    ember.save(t, tmp_path / "b.pt")
    with open(tmp_path / "c.pt", "wb") as f:
        ember.save(t, f)
    for name in ("a.pt", "b.pt", "c.pt"):
        assert ember.load(tmp_path / name).tolist() == [[0, 1, 2], [3, 4, 5]]
        with open(tmp_path / name, "rb") as f:
            assert ember.load(f).tolist() == [[0, 1, 2], [3, 4, 5]]
        assert ember.load(str(tmp_path / name)).tolist() == [[0, 1, 2], [3, 4, 5]]


def test_file_object_at_an_offset_and_unseekable_streams():
    buf = io.BytesIO()
    buf.write(b"HEADER--")
    ember.save({"x": ember.ones(2)}, buf)
    buf.seek(8)
    assert ember.load(buf)["x"].tolist() == [1.0, 1.0]

    class Pipe(io.RawIOBase):   # write-only, no seek or tell: zip data descriptors are used
        def __init__(self):
            self.data = bytearray()

        def writable(self):
            return True

        def write(self, b):
            self.data += bytes(b)
            return len(b)

    p = Pipe()
    ember.save({"x": ember.arange(4.0)}, p)

    class Reader(io.RawIOBase):   # read-only stream: load buffers it
        def __init__(self, data):
            self._b = io.BytesIO(data)

        def readable(self):
            return True

        def seekable(self):
            return False

        def readinto(self, b):
            return self._b.readinto(b)

    assert ember.load(Reader(bytes(p.data)))["x"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_text_files_and_bad_arguments_are_refused(tmp_path):
    with open(tmp_path / "t.txt", "w") as f:
        with pytest.raises(TypeError, match="binary"):
            ember.save({}, f)
    with pytest.raises(TypeError, match="path or a binary file"):
        ember.save({}, 3)
    with pytest.raises(ValueError, match="format"):
        ember.save({}, io.BytesIO(), format="onnx")
    with pytest.raises(ValueError, match="zip format"):
        ember.save({}, io.BytesIO(), _use_new_zipfile_serialization=False)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ember.save({}, tmp_path / "missing" / "x.pt")
    with pytest.raises(IsADirectoryError):
        ember.save({}, tmp_path)
    with pytest.raises(FileNotFoundError):
        ember.load(tmp_path / "nothing.pt")
    buf = io.BytesIO()
    ember.save({}, buf)
    buf.seek(0)
    with pytest.raises(TypeError, match="map_location"):
        ember.load(buf, map_location=3)


# -- map_location -------------------------------------------------------------------------------
def _saved(obj) -> bytes:
    buf = io.BytesIO()
    ember.save(obj, buf)
    return buf.getvalue()


@pytest.mark.parametrize("ml", ["cpu", ember.device("cpu"), {"cpu": "cpu"}, {ember.device("cpu"): "cpu"}, None],
                         ids=["str", "device", "dict", "dict-device-keys", "none"])
def test_map_location_forms(ml):
    data = _saved({"w": ember.arange(3.0)})
    back = ember.load(io.BytesIO(data), map_location=ml)
    assert back["w"].device == ember.device("cpu") and back["w"].tolist() == [0.0, 1.0, 2.0]


def test_map_location_callable_sees_cpu_storage_and_location():
    data = _saved({"a": ember.arange(3.0), "b": ember.ones(2, dtype=ember.int64)})
    seen = []

    def fn(storage, location):
        seen.append((type(storage), storage.device.type, storage.nbytes(), location))
        return storage if len(seen) == 1 else None

    back = ember.load(io.BytesIO(data), map_location=fn)
    assert seen == [(ember.UntypedStorage, "cpu", 12, "cpu"), (ember.UntypedStorage, "cpu", 16, "cpu")]
    assert back["a"].tolist() == [0.0, 1.0, 2.0] and back["b"].tolist() == [1, 1]
    back = ember.load(io.BytesIO(data), map_location=lambda s, loc: "cpu")
    assert back["a"].device.type == "cpu"
    with pytest.raises(TypeError, match="map_location returned"):
        ember.load(io.BytesIO(data), map_location=lambda s, loc: 7)


def test_map_location_dict_leaves_unlisted_locations(prim_backend):
    obj = {"p": ember.arange(3.0, device="prim"), "c": ember.ones(2)}
    data = _saved(obj)
    back = ember.load(io.BytesIO(data), map_location={"prim:0": "cpu"})
    assert back["p"].device.type == "cpu" and back["c"].device.type == "cpu"
    back = ember.load(io.BytesIO(data), map_location={"cpu": "prim:0"})
    assert back["p"].device.type == "prim" and back["c"].device.type == "prim"
    assert back["c"].tolist() == [1.0, 1.0]
    back = ember.load(io.BytesIO(data))
    assert back["p"].device.type == "prim" and back["c"].device.type == "cpu"


def test_file_from_a_device_this_machine_lacks(prim_backend):
    """Saved where a backend exists, loaded where it doesn't (a GPU checkpoint on a CPU box)."""
    data = _saved({"w": ember.arange(4.0, device="prim").reshape(2, 2)})
    ember._plugins.unregister_plugin("primitives-test")
    try:
        with pytest.raises(RuntimeError) as e:
            ember.load(io.BytesIO(data))
        msg = str(e.value)
        assert "'prim:0'" in msg and "map_location='cpu'" in msg and "no installed ember backend" in msg
        back = ember.load(io.BytesIO(data), map_location="cpu")
        assert back["w"].device.type == "cpu" and back["w"].tolist() == [[0.0, 1.0], [2.0, 3.0]]
        with pytest.raises(RuntimeError, match="map_location sent it to 'prim'"):
            ember.load(io.BytesIO(data), map_location={"prim:0": "prim"})
    finally:
        from primitives_backend import PrimitivesPlugin
        ember._plugins.register_plugin(PrimitivesPlugin(), name="primitives-test")


def test_cuda_location_without_cuda_names_the_fix():
    data = _saved({"w": ember.ones(2)})
    hacked = _relocate(data, "cpu", "cuda:0")
    with pytest.raises(RuntimeError, match=r"saved on device 'cuda:0'.*\n.*map_location='cpu'") as e:
        ember.load(io.BytesIO(hacked))
    assert "cuda" in str(e.value)
    assert ember.load(io.BytesIO(hacked), map_location="cpu")["w"].tolist() == [1.0, 1.0]


def _relocate(data: bytes, old: str, new: str) -> bytes:
    """The archive with data.pkl's location strings rewritten (as a file saved on ``new``)."""
    enc = lambda s: b"X" + len(s).to_bytes(4, "little") + s.encode()  # noqa: E731
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            payload = zin.read(info)
            if info.filename.endswith("data.pkl"):
                assert enc(old) in payload
                payload = payload.replace(enc(old), enc(new))
            zout.writestr(info.filename, payload)
    return out.getvalue()


# -- loading efficiently ------------------------------------------------------------------------
def test_load_reads_each_storage_straight_into_the_tensor_buffer(monkeypatch):
    data = _saved({"w": ember.arange(1000.0)})
    targets = []
    real = A._read_into

    def spy(fh, out):
        targets.append(out)
        return real(fh, out)

    monkeypatch.setattr(A, "_read_into", spy)
    back = ember.load(io.BytesIO(data))["w"]
    assert len(targets) == 1
    assert np.shares_memory(targets[0], back.numpy())   # no second copy after reading


def test_save_streams_the_storage_without_copying(monkeypatch):
    t = ember.arange(1000.0)
    written = []
    real = A._write_record

    def spy(zf, name, payload):
        if "/data/" in name:
            written.append(payload)
        return real(zf, name, payload)

    monkeypatch.setattr(A, "_write_record", spy)
    ember.save({"w": t}, io.BytesIO())
    assert len(written) == 1 and np.shares_memory(written[0], t.numpy())


def test_mmap_load(tmp_path):
    t = ember.arange(100.0).reshape(10, 10)
    ember.save({"w": t, "v": t[3]}, tmp_path / "m.pt")
    back = ember.load(tmp_path / "m.pt", mmap=True)
    same_tensor(t, back["w"])
    assert back["v"].untyped_storage() is back["w"].untyped_storage()
    back["w"][0, 0] = 5.0    # copy-on-write: the tensor is writable, the file is unchanged
    assert ember.load(tmp_path / "m.pt")["w"][0, 0].item() == 0.0
    with pytest.raises(ValueError, match=r"mmap=True\) needs a file path"):
        ember.load(io.BytesIO(_saved({})), mmap=True)


def test_big_endian_files_are_byteswapped():
    t = ember.tensor([1.5, -2.0, 3.25], dtype=ember.float64)
    i = ember.tensor([1, 256, -3], dtype=ember.int16)
    data = _saved({"f": t, "i": i, "b": ember.tensor([True, False])})
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            payload = zin.read(info)
            if info.filename.endswith("byteorder"):
                payload = b"big"
            elif info.filename.endswith("data/0"):
                payload = np.frombuffer(payload, "<f8").astype(">f8").tobytes()
            elif info.filename.endswith("data/1"):
                payload = np.frombuffer(payload, "<i2").astype(">i2").tobytes()
            zout.writestr(info.filename, payload)
    back = ember.load(io.BytesIO(out.getvalue()))
    assert back["f"].tolist() == [1.5, -2.0, 3.25] and back["i"].tolist() == [1, 256, -3]
    assert back["b"].tolist() == [True, False]


def test_compressed_archives_still_load():
    """A checkpoint re-zipped with deflate by another tool takes the slow path, same result."""
    data = _saved({"w": ember.arange(50.0), "v": ember.ones(3, dtype=ember.int8)})
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info))
    back = ember.load(io.BytesIO(out.getvalue()))
    assert back["w"].tolist() == list(np.arange(50.0)) and back["v"].tolist() == [1, 1, 1]


def test_large_storage_crc_is_checked_on_the_helper_thread():
    t = ember.arange(float(A._CRC_THREAD_MIN // 4 + 10))
    data = bytearray(_saved({"w": t}))
    back = ember.load(io.BytesIO(bytes(data)))["w"]
    assert bits(back) == bits(t)
    i = bytes(data).find(np.float32(1000.0).tobytes())
    data[i] ^= 0x01
    with pytest.raises(RuntimeError, match="CRC-32"):
        ember.load(io.BytesIO(bytes(data)))


# -- plain pickle and copy keep their own protocol ----------------------------------------------
def test_plain_pickle_copy_and_deepcopy_of_tensors_are_unchanged():
    import copy
    t = ember.arange(6.0).reshape(2, 3)[:, 1:]
    r = pickle.loads(pickle.dumps(t))
    assert r.tolist() == t.tolist() and r.is_contiguous()
    assert b"_rebuild_tensor\x94" in pickle.dumps(t) and not pickle.dumps(t).startswith(b"PK")
    assert copy.deepcopy(t).tolist() == t.tolist()
    assert S._reduce_tensor(t)[0] is S._rebuild_tensor


# -- arbitrary objects with weights_only=False -------------------------------------------------------
class Checkpointable:
    def __init__(self, w):
        self.w = w
        self.history = [0.5, 0.25]


def test_custom_objects_with_weights_only_false():
    obj = Checkpointable(ember.ones(2, 2))
    back = roundtrip({"obj": obj, "alias": obj.w}, weights_only=False)
    assert isinstance(back["obj"], Checkpointable) and back["obj"].history == [0.5, 0.25]
    assert back["alias"] is back["obj"].w and back["obj"].w.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_custom_pickle_module_and_protocols():
    for proto in (2, 3, 4, 5):
        buf = io.BytesIO()
        ember.save({"w": ember.arange(3), "s": "x"}, buf, pickle_protocol=proto)
        buf.seek(0)
        assert ember.load(buf)["w"].tolist() == [0, 1, 2]
    buf = io.BytesIO()
    ember.save({"w": ember.ones(1)}, buf, pickle_module=pickle)
    buf.seek(0)
    with pytest.raises(RuntimeError, match="weights_only=False"):
        ember.load(buf, pickle_module=_PickleLike)
    buf.seek(0)
    assert ember.load(buf, pickle_module=_PickleLike, weights_only=False)["w"].tolist() == [1.0]
    buf = io.BytesIO()
    ember.save({"w": ember.ones(2)}, buf, pickle_module=_PickleLike)
    buf.seek(0)
    assert ember.load(buf)["w"].tolist() == [1.0, 1.0]


class _PickleLike:
    """A third-party pickle module (as dill is): its own Pickler and Unpickler classes."""

    class Pickler(pickle.Pickler):
        pass

    class Unpickler(pickle.Unpickler):
        pass


def test_top_level_names():
    assert ember.save is S.save and ember.load is S.load
    for name in S.__all__:
        assert getattr(S, name).__doc__ or name == "DEFAULT_PROTOCOL"


def test_loaded_storages_are_freed_without_the_garbage_collector():
    import gc
    import weakref
    for fmt in ("ember", "torch"):
        buf = io.BytesIO()
        ember.save({"w": ember.ones(1000)}, buf, format=fmt)
        fmt_data = buf.getvalue()
        gc.disable()
        try:
            d = ember.load(io.BytesIO(fmt_data))
            ref = weakref.ref(d["w"].untyped_storage())
            del d
            assert ref() is None   # freed at once: loading in a loop does not pile up memory
        finally:
            gc.enable()


def test_save_keeps_no_reference_to_what_it_saved():
    import gc
    import weakref
    for fmt in ("ember", "torch"):
        gc.disable()
        try:
            t = ember.ones(1000)
            refs = (weakref.ref(t), weakref.ref(t.untyped_storage()))
            ember.save({"t": t, "v": t[1:]}, io.BytesIO(), format=fmt)
            del t
            assert refs[0]() is None and refs[1]() is None
        finally:
            gc.enable()
