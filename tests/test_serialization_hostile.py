"""Hostile and malformed checkpoints, crafted by hand: ember.load (weights_only=True) allocates no
more than the file really holds, lets no file set state that is not tensor state, and raises
``ember.serialization.CheckpointError`` (a ``pickle.UnpicklingError`` and a ``RuntimeError``)
for every file it cannot read: truncated, corrupt, bad zip, bad pickle, wrong types inside."""
import collections
import io
import pickle
import random
import struct
import tracemalloc
import zipfile

import numpy as np
import pytest

import ember
from ember import serialization as S
from ember.serialization import CheckpointError

MB = 1 << 20


# -- building files ----------------------------------------------------------------------------------
class G:
    """A global written by name (``torch._utils._rebuild_tensor_v2``), never imported."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):   # pickle wants reduce functions callable
        raise AssertionError("never called")


class Pid:
    def __init__(self, *pid):
        self.pid = pid


class Call:
    """Pickles as ``fn(*args)``, then ``BUILD state`` if ``state`` is given."""

    def __init__(self, fn, args, state=None):
        self.fn, self.args, self.state = fn, args, state


class _Writer(pickle._Pickler):
    dispatch = pickle._Pickler.dispatch.copy()

    def save_g(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())

    dispatch[G] = save_g

    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, Pid) else None

    def reducer_override(self, obj):
        if isinstance(obj, Call):
            return (obj.fn, obj.args) if obj.state is None else (obj.fn, obj.args, obj.state)
        return NotImplemented


def pkl(obj) -> bytes:
    buf = io.BytesIO()
    _Writer(buf, 2).dump(obj)
    return buf.getvalue()


def archive(data_pkl: bytes, storages=None, method=zipfile.ZIP_STORED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("archive/data.pkl", data_pkl, compress_type=method)
        z.writestr("archive/byteorder", "little")
        for k, v in (storages or {}).items():
            z.writestr(f"archive/data/{k}", v, compress_type=method)
    return out.getvalue()


def v2(key="0", numel=4, size=(4,), stride=(1,), offset=0, stype="FloatStorage"):
    """``torch._utils._rebuild_tensor_v2`` of storage ``key``, as torch.save writes it."""
    return Call(G("torch._utils", "_rebuild_tensor_v2"),
                (Pid("storage", G("torch", stype), key, "cpu", numel), offset, size, stride, False,
                 Call(G("collections", "OrderedDict"), ())))


def load(data: bytes, **kw):
    return ember.load(io.BytesIO(data), **kw)


def peak_bytes(fn) -> int:
    """The most memory (Python and numpy allocations) ``fn`` held at once."""
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def refused(data: bytes, match: str | None = None, **kw) -> CheckpointError:
    with pytest.raises(CheckpointError, match=match) as e:
        load(data, **kw)
    assert isinstance(e.value, pickle.UnpicklingError) and isinstance(e.value, RuntimeError)
    return e.value


# -- the exception type ----------------------------------------------------------------------------
def test_checkpoint_error_is_public_and_both_kinds_of_error():
    assert "CheckpointError" in S.__all__ and S.CheckpointError.__module__ == "ember.serialization"
    assert issubclass(CheckpointError, pickle.UnpicklingError) and issubclass(CheckpointError, RuntimeError)


def test_refused_globals_raise_it_too():
    e = refused(archive(pkl(Call(G("os", "system"), ("echo hi",)))), match="'posix.system'|'os.system'")
    assert "weights_only=True" in str(e)


# -- allocation bounded by the file ------------------------------------------------------------------
@pytest.mark.parametrize("cls", [G("ember._tensor", "Tensor"), G("torch", "Tensor"),
                                 G("ember.nn.parameter", "Parameter"), G("torch.nn.parameter", "Parameter")])
def test_a_tiny_file_cannot_call_a_tensor_class_to_allocate(cls):
    data = archive(pkl(Call(cls, (50_000_000,))))   # Tensor(50e6): 200 MB from a few hundred bytes
    assert len(data) < 600
    assert peak_bytes(lambda: refused(data, match="tensor class")) < 4 * MB
    # nor create one with __new__ (NEWOBJ): a tensor without a storage
    newobj = b"\x80\x02c" + f"{cls.module}\n{cls.name}\n".encode() + b"J\x00\xe1\xf5\x05\x85\x81."
    refused(archive(newobj), match="NEWOBJ")


def test_tensor_classes_still_rebuild_as_the_type_to_build():
    t = ember.ones(2)
    t.note = "x"
    for fmt in (None, "ember", "torch"):
        buf = io.BytesIO()
        ember.save({"t": t, "p": ember.nn.Parameter(ember.zeros(1))}, buf, format=fmt)
        back = ember.load(io.BytesIO(buf.getvalue()))
        assert back["t"].note == "x" and type(back["p"]) is ember.nn.Parameter


def test_a_storage_is_only_as_big_as_its_record():
    # the pickle asks for 1e9 floats; the record is 16 bytes: refused before allocating
    data = archive(pkl(v2(numel=1_000_000_000, size=(2,))), {"0": b"\0" * 16})
    assert peak_bytes(lambda: refused(data, match="holds 16 bytes")) < 4 * MB
    # the zip directory lies about the record's size: the bytes are not in the file
    data = bytearray(archive(pkl(v2(numel=250_000_000, size=(2,))), {"0": b"\0" * 16}))
    _patch_sizes(data, "archive/data/0", 1_000_000_000, 1_000_000_000)
    assert peak_bytes(lambda: refused(bytes(data), match="truncated|sizes")) < 4 * MB


def test_a_deflated_record_cannot_claim_more_than_deflate_expands():
    data = bytearray(archive(pkl(v2(numel=500_000_000, size=(2,))), {"0": b"\0" * MB}, zipfile.ZIP_DEFLATED))
    _patch_sizes(data, "archive/data/0", None, 2_000_000_000)   # 1 MB of deflate "holding" 2 GB
    assert peak_bytes(lambda: refused(bytes(data), match="more than deflate can expand")) < 4 * MB
    pk = bytearray(archive(pkl([1, 2]), {}, zipfile.ZIP_DEFLATED))
    _patch_sizes(pk, "archive/data.pkl", None, 2_000_000_000)
    refused(bytes(pk), match="data.pkl.*more than deflate")


def test_a_deflated_record_inflates_no_further_than_its_declared_size():
    big = np.zeros(16 * MB, np.uint8).tobytes()   # deflates ~1000:1; declared as 1 KB
    data = bytearray(archive(pkl(v2(numel=256, size=(2,))), {"0": big}, zipfile.ZIP_DEFLATED))
    _patch_sizes(data, "archive/data/0", None, 1024)
    assert peak_bytes(lambda: refused(bytes(data), match="storage '0'")) < 4 * MB


def test_other_compression_methods_are_refused():
    data = archive(pkl(v2()), {"0": b"\0" * 16}, zipfile.ZIP_BZIP2)
    refused(data, match="zip method 12")


def test_rezipped_checkpoints_still_load():
    src = io.BytesIO()
    base = ember.arange(1000.0)
    ember.save({"w": base, "v": base[::3]}, src)
    z = zipfile.ZipFile(src)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as w:
        for name in z.namelist():
            w.writestr(name, z.read(name))
    back = load(out.getvalue())
    assert back["w"].tolist() == list(range(1000)) and back["v"].untyped_storage() is back["w"].untyped_storage()


def test_overlapping_records_cannot_name_the_same_bytes_twice():
    # 64 central-directory entries, one local record of 1 MB: 64 MB of tensors from a 1 MB file
    n = 64
    obj = [v2(key=str(i), numel=MB // 4, size=(MB // 4,)) for i in range(n)]
    data = bytearray(archive(pkl(obj), {str(i): b"\0" * MB if i == 0 else b"" for i in range(n)}))
    first = _central(data, "archive/data/0")
    for i in range(1, n):
        c = _central(data, f"archive/data/{i}")
        data[c + 16:c + 28] = data[first + 16:first + 28]   # same CRC and sizes
        data[c + 42:c + 46] = data[first + 42:first + 46]   # same local header
    assert peak_bytes(lambda: refused(bytes(data), match="overlaps another record")) < 8 * MB


def test_a_file_cannot_make_the_unpickler_size_its_memo():
    # LONG_BINPUT 67 million: the C unpickler would allocate its memo table (1 GB) for this index
    data = archive(b"\x80\x02Nr\x00\x00\x00\x04.")
    assert peak_bytes(lambda: load(data)) < 4 * MB
    assert peak_bytes(lambda: S.get_unsafe_globals_in_checkpoint(io.BytesIO(data))) < 4 * MB
    # BYTEARRAY8 of 1 GB in a 20-byte pickle: pickle's own reader would allocate it before reading
    data = archive(b"\x80\x05\x96" + struct.pack("<Q", 1 << 30) + b"ab.")
    assert peak_bytes(lambda: refused(data, match="bytearray of 1073741824 bytes")) < 4 * MB

    def scan():
        with pytest.raises(CheckpointError, match="bytearray"):
            S.get_unsafe_globals_in_checkpoint(io.BytesIO(data))
    assert peak_bytes(scan) < 4 * MB


# -- only tensor state -----------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["numpy", "__add__", "tolist", "data", "_storage", "_shape", "_inference",
                                 "_post_accumulate_hooks", "__class__", "__dict__"])
def test_rebuild_state_cannot_override_what_the_tensor_class_defines(key):
    args = (Pid("storage", "float32", "0", "cpu", 4), Call(G("ember._dtype", "_dtype_from_name"), ("float32",)),
            0, (4,), (1,), False)
    ember_fmt = Call(G("ember.serialization", "_rebuild_from_type"), (G("ember._tensor", "Tensor"), args, {key: 1}))
    torch_fmt = Call(G("torch._tensor", "_rebuild_from_type_v2"),
                     (G("torch._utils", "_rebuild_tensor_v2"), G("torch", "Tensor"), v2().args, {key: 1}))
    param = Call(G("torch._utils", "_rebuild_parameter_with_state"), (v2(), True, {}, {key: 1}))
    for obj in (ember_fmt, torch_fmt, param):
        refused(archive(pkl(obj), {"0": b"\0" * 16}), match=f"sets '{key}'")


def test_build_cannot_set_a_tensors_slots_or_methods():
    for state in ({"numpy": 1}, (None, {"_shape": (10 ** 9,)}), (None, {"_storage": None}), [1]):
        refused(archive(pkl(Call(v2().fn, v2().args, state)), {"0": b"\0" * 16}), match="tensor|slots|state")


def test_build_on_storages_sets_and_plain_objects_is_refused():
    pid = Pid("storage", G("torch", "FloatStorage"), "0", "cpu", 4)
    # a storage from the file, with its backend buffer replaced
    refused(archive(b"\x80\x02" + pkl_body(pid) + b"N}X\x05\x00\x00\x00_dataK\x01s\x86b.", {"0": b"\0" * 16}),
            match="BUILD")
    refused(archive(pkl(Call(G("builtins", "set"), ([1],), {"a": 1}))), match="BUILD")
    refused(archive(pkl(Call(G("builtins", "complex"), (1,), {"a": 1}))), match="BUILD")


def pkl_body(obj) -> bytes:
    return pkl(obj)[2:-1]


def test_ordered_dict_state_is_attributes_not_methods():
    ok = Call(G("collections", "OrderedDict"), (), {"_metadata": {"": {"version": 1}}})
    assert load(archive(pkl(ok)))._metadata == {"": {"version": 1}}
    for key in ("keys", "__getitem__", "items"):
        refused(archive(pkl(Call(G("collections", "OrderedDict"), (), {key: 1}))), match=f"sets '{key}'")


def test_user_attributes_and_allowed_classes_keep_their_state():
    t = ember.arange(3.0)
    t.note, t._private, t.step = "kept", 2, ember.ones(1)
    back = ember.load(io.BytesIO(_saved({"t": t})))["t"]
    assert (back.note, back._private, back.step.tolist()) == ("kept", 2, [1.0])
    sd = ember.nn.Linear(2, 2).state_dict()
    sd._metadata = {"": {"version": 1}}
    assert ember.load(io.BytesIO(_saved(sd)))._metadata == {"": {"version": 1}}
    with S.safe_globals([Point]):
        assert ember.load(io.BytesIO(_saved(Point(1, 2)))).__dict__ == {"x": 1, "y": 2}


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


def _saved(obj, **kw) -> bytes:
    buf = io.BytesIO()
    ember.save(obj, buf, **kw)
    return buf.getvalue()


# -- every malformed file: one exception ------------------------------------------------------------------
MALFORMED_PICKLES = {
    "empty pickle": b"",
    "bad opcode": b"\x80\x02\xff.",
    "no STOP": b"\x80\x02}q\x00(X",
    "stack underflow": b"\x80\x02.",
    "bad utf-8 string": b"\x80\x02X\x02\x00\x00\x00\xff\xfe.",
    "bad utf-8 global": b"\x80\x02c\xff\xfe\nx\n.",
    "unhashable key": b"\x80\x02}]Ns.",
    "missing memo": b"\x80\x02h\x05.",
    "bad protocol": b"\x80\x09N.",
    "string persistent id": b"\x80\x02P0\n.",
    "out-of-band buffer": b"\x80\x05\x97.",
    "huge frame": b"\x80\x04\x95\xff\xff\xff\xff\x00\x00\x00\x00N.",
    "long decimal": b"\x80\x02L" + b"9" * 5000 + b"L\n.",
    "tuple persistent id of garbage": pkl(Pid("storage", 3, 4, 5, 6)),
    "storage key not a str": pkl(v2(key=7)),
    "size as a string": pkl(v2(size="ab", stride=(1,))),
    "offset as a float": pkl(v2(offset=1.5)),
    "dtype as a str": pkl(Call(G("torch._utils", "_rebuild_tensor_v3"), (
        Pid("storage", G("torch", "FloatStorage"), "0", "cpu", 4), 0, (4,), (1,), False, {}, "float32"))),
    "rebuild with no args": pkl(Call(G("torch._utils", "_rebuild_tensor_v2"), ())),
    "rebuild of a non-storage": pkl(Call(G("torch._utils", "_rebuild_tensor_v2"), (1, 0, (1,), (1,), False, {}))),
    "parameter of an int": pkl(Call(G("torch._utils", "_rebuild_parameter"), (3, True, {}))),
    "Size of strings": pkl(Call(G("torch", "Size"), (("a",),))),
    "device of a list": pkl(Call(G("torch", "device"), ([],))),
    "set of a dict": pkl(Call(G("builtins", "set"), (1,))),
    "ordered dict of ints": pkl(Call(G("collections", "OrderedDict"), (5,))),
    "from_type of a function": pkl(Call(G("torch._tensor", "_rebuild_from_type_v2"),
                                        (G("builtins", "complex"), G("torch", "Tensor"), (1,), {}))),
}


@pytest.mark.parametrize("name", list(MALFORMED_PICKLES))
@pytest.mark.parametrize("weights_only", [True, False])
def test_every_malformed_pickle_is_a_checkpoint_error(name, weights_only):
    refused(archive(MALFORMED_PICKLES[name], {"0": b"\0" * 16}), weights_only=weights_only)


def test_bad_zips_and_records_are_checkpoint_errors():
    good = _saved({"w": ember.arange(4.0)})
    cases = {
        "empty": b"", "garbage": b"\x00garbage" * 10, "zip magic only": b"PK\x03\x04",
        "half": good[: len(good) // 2], "no directory end": good[:-22], "bad directory": good[:-30] + b"\xff" * 30,
        "npy": b"\x93NUMPY" + b"\0" * 50, "bare pickle": pickle.dumps([1]),
    }
    for name, data in cases.items():
        with pytest.raises(CheckpointError):
            load(data)
        with pytest.raises(CheckpointError):
            S.get_unsafe_globals_in_checkpoint(io.BytesIO(data))
    bad_order = archive(pkl([1]))
    bad_order = bad_order.replace(b"little", b"middle")
    refused(bad_order, match="byteorder")
    z = io.BytesIO()
    with zipfile.ZipFile(z, "w") as w:
        w.writestr("archive/nothing", b"")
    refused(z.getvalue(), match="no data.pkl")


def test_errors_that_are_not_the_files_are_not_checkpoint_errors():
    data = _saved({"w": ember.ones(2)})

    def boom(storage, location):
        raise ZeroDivisionError("mine")
    with pytest.raises(ZeroDivisionError, match="mine"):
        load(data, map_location=boom)
    with pytest.raises(TypeError, match="map_location"):
        load(data, map_location=lambda s, loc: 3)
    with pytest.raises(TypeError, match="map_location"):
        load(data, map_location=3)
    with pytest.raises(ValueError, match="mmap=True"):
        load(data, mmap=True)
    try:
        load(data, map_location="nodevice:0")
    except Exception as e:   # the device is missing here: not a corrupt file
        assert type(e) is RuntimeError and "map_location" in str(e)


# -- fuzzing ----------------------------------------------------------------------------------------------
def _fuzz_source() -> tuple:
    obj = {"w": ember.arange(12.0).reshape(3, 4), "sd": ember.nn.Linear(2, 3).state_dict(), "n": [1, "s", (2.5,)],
           "i": ember.arange(5, dtype=ember.int64), "p": ember.nn.Parameter(ember.ones(2))}
    obj["v"] = obj["w"][:, 1]
    return obj, _saved(obj)


def _same(a, b) -> bool:
    if isinstance(a, ember.Tensor):
        return (type(a) is type(b) and a.dtype is b.dtype and a.shape == b.shape
                and a.stride() == b.stride() and bool((a == b).all()))
    if isinstance(a, dict):
        return type(a) is type(b) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_fuzzed_files_load_as_saved_or_raise_checkpoint_error():
    obj, good = _fuzz_source()
    rng = random.Random(20)
    outcomes = collections.Counter()
    for i in range(400):
        data = bytearray(good)
        if i % 4 == 0:
            data = data[: rng.randrange(len(data))]
        else:
            for _ in range(rng.choice((1, 1, 2, 8))):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        for weights_only in (True, False):
            try:
                back = load(bytes(data), weights_only=weights_only)
            except CheckpointError:
                outcomes["refused"] += 1
                continue
            assert _same(back, obj), f"fuzz case {i} loaded different values"
            outcomes["same"] += 1
        try:
            S.get_unsafe_globals_in_checkpoint(io.BytesIO(bytes(data)))
        except CheckpointError:
            pass
    assert outcomes["refused"] > 400


def test_fuzzed_pickles_raise_checkpoint_error():
    """Byte flips inside data.pkl, with the record's CRC recomputed (so that the pickle, not the
    CRC check, meets them). weights_only=True only: with weights_only=False (trusted files) the C
    unpickler reads, and a flip can give it a memo index it sizes its table by (MemoryError)."""
    _, good = _fuzz_source()
    pk = zipfile.ZipFile(io.BytesIO(good)).read("archive/data.pkl")
    storages = {n.rsplit("/", 1)[1]: zipfile.ZipFile(io.BytesIO(good)).read(n)
                for n in zipfile.ZipFile(io.BytesIO(good)).namelist() if "/data/" in n}
    rng = random.Random(21)
    for i in range(300):
        p = bytearray(pk)
        if i % 5 == 0:
            p = p[: rng.randrange(len(p))]
        else:
            for _ in range(rng.choice((1, 2, 4))):
                p[rng.randrange(2, len(p))] = rng.randrange(256)
        try:
            load(archive(bytes(p), storages))
        except CheckpointError:
            pass


# -- zip patching helpers ------------------------------------------------------------------------------
def _central(data: bytearray, name: str) -> int:
    """Offset of ``name``'s central directory entry."""
    pos = data.index(b"PK\x01\x02")
    while True:
        n, m, k = struct.unpack("<HHH", data[pos + 28:pos + 34])
        if data[pos + 46:pos + 46 + n].decode() == name:
            return pos
        pos += 46 + n + m + k


def _patch_sizes(data: bytearray, name: str, compressed, uncompressed) -> None:
    """Rewrite ``name``'s sizes in its central entry and local header (None: keep)."""
    c = _central(data, name)
    local = struct.unpack("<I", data[c + 42:c + 46])[0]
    for base, off in ((c, 20), (local, 18)):
        if compressed is not None:
            data[base + off:base + off + 4] = struct.pack("<I", compressed)
        if uncompressed is not None:
            data[base + off + 4:base + off + 8] = struct.pack("<I", uncompressed)

