"""ember.load's safe default: the restricted unpickler (weights_only=True), the safe-globals API,
and hostile files (code-running reductions, unknown globals, malformed records)."""
import collections
import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import ember
from ember import serialization as S


@pytest.fixture(autouse=True)
def _no_leftover_safe_globals():
    S.clear_safe_globals()
    yield
    S.clear_safe_globals()


class RunsCode:
    """Unpickling this calls ``touch(path)``: the classic malicious checkpoint."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (_touch, (self.path,))


def _touch(path):
    open(path, "w").close()
    return "ran"


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


def _saved(obj, **kw) -> io.BytesIO:
    buf = io.BytesIO()
    ember.save(obj, buf, **kw)
    buf.seek(0)
    return buf


def test_os_system_reduce_is_refused_before_it_runs(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'pwned'}",))

    buf = _saved({"w": ember.ones(2), "x": Evil()})
    with pytest.raises(pickle.UnpicklingError) as e:
        ember.load(buf)
    name = f"{os.system.__module__}.system"
    assert f"'{name}'" in str(e.value) and "weights_only=True" in str(e.value)
    assert "add_safe_globals" in str(e.value)
    assert not (tmp_path / "pwned").exists()


def test_an_unknown_function_is_refused_and_never_called(tmp_path):
    marker = tmp_path / "ran"
    buf = _saved([RunsCode(str(marker))])
    with pytest.raises(pickle.UnpicklingError, match=r"test_serialization_safety\._touch"):
        ember.load(buf)
    assert not marker.exists()
    buf.seek(0)
    assert ember.load(buf, weights_only=False) == ["ran"] and marker.exists()   # trusted: runs


def test_weights_only_none_means_true():
    buf = _saved(Point(1, 2))
    with pytest.raises(pickle.UnpicklingError, match="Point"):
        ember.load(buf, weights_only=None)


def test_custom_classes_need_allowing():
    buf = _saved({"p": Point(1, ember.ones(2))})
    with pytest.raises(pickle.UnpicklingError, match=r"test_serialization_safety\.Point"):
        ember.load(buf)
    buf.seek(0)
    with S.safe_globals([Point]):
        assert S.get_safe_globals() == [Point]
        p = ember.load(buf)["p"]
    assert isinstance(p, Point) and p.x == 1 and p.y.tolist() == [1.0, 1.0]
    assert S.get_safe_globals() == []      # the context manager restores the list
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        ember.load(buf)
    S.add_safe_globals([Point])
    buf.seek(0)
    assert isinstance(ember.load(buf)["p"], Point)
    S.clear_safe_globals()
    assert S.get_safe_globals() == []


def test_safe_globals_under_another_name():
    buf = _saved(collections.defaultdict(int, a=1))
    with pytest.raises(pickle.UnpicklingError, match="collections.defaultdict"):
        ember.load(buf)
    buf.seek(0)
    # the defaultdict's factory (builtins.int) is a global too: both must be allowed
    with S.safe_globals([collections.defaultdict, (int, "builtins.int")]):
        d = ember.load(buf)
    assert d["a"] == 1 and d["missing"] == 0


def test_add_safe_globals_refuses_malformed_entries():
    with pytest.raises(TypeError, match="__module__"):
        S.add_safe_globals([3])
    with pytest.raises(TypeError, match="module.name"):
        S.add_safe_globals([(Point, 3)])
    assert S.get_safe_globals() == []


def test_numpy_arrays_are_not_admitted_by_default():
    buf = _saved({"a": np.arange(3)})
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        ember.load(buf)
    buf.seek(0)
    assert ember.load(buf, weights_only=False)["a"].tolist() == [0, 1, 2]


def test_get_unsafe_globals_in_checkpoint_lists_without_running(tmp_path):
    marker = tmp_path / "ran"
    buf = _saved({"a": RunsCode(str(marker)), "b": Point(1, 2), "c": ember.ones(1), "d": collections.OrderedDict()})
    found = S.get_unsafe_globals_in_checkpoint(buf)
    assert found == ["test_serialization_safety._touch", "test_serialization_safety.Point"]
    assert not marker.exists()
    assert S.get_unsafe_globals_in_checkpoint(_saved({"w": ember.ones(2)})) == []


# -- hostile files ----------------------------------------------------------------------------------
def _archive(data_pkl: bytes, storages: dict = None) -> io.BytesIO:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("archive/data.pkl", data_pkl)
        z.writestr("archive/byteorder", "little")
        for k, v in (storages or {}).items():
            z.writestr(f"archive/data/{k}", v)
    out.seek(0)
    return out


def _pickle_with_pid(obj_builder) -> bytes:
    """A pickle where ``obj_builder(pid)`` places storage persistent ids."""
    class P(pickle.Pickler):
        def persistent_id(self, obj):
            return obj.pid if isinstance(obj, _Pid) else None
    buf = io.BytesIO()
    P(buf, 2).dump(obj_builder(_Pid))
    return buf.getvalue()


class _Pid:
    def __init__(self, *pid):
        self.pid = pid


def test_tensor_reaching_past_its_storage_is_refused():
    data = _pickle_with_pid(lambda P: _Reduce(S._rebuild_tensor_from_storage,
                                              (P("storage", "float32", "0", "cpu", 4), ember.float32, 2, (3,), (1,),
                                               False)))
    with pytest.raises(RuntimeError, match="reaches past the end of its storage"):
        ember.load(_archive(data, {"0": b"\x00" * 16}))


@pytest.mark.parametrize("args, msg", [
    ((-1, (2,), (1,)), "negative"), ((0, (2, 2), (1,)), "do not match"), ((0, (True,), (1,)), "bool"),
    ((0, ("a",), (1,)), "expected an int"), ((0, (2,), (-1,)), "negative"),
])
def test_malformed_geometry_is_refused(args, msg):
    data = _pickle_with_pid(lambda P: _Reduce(S._rebuild_tensor_from_storage,
                                              (P("storage", "float32", "0", "cpu", 4), ember.float32, *args, False)))
    with pytest.raises(RuntimeError, match=msg):
        ember.load(_archive(data, {"0": b"\x00" * 16}))


def test_storage_size_must_match_its_record():
    data = _pickle_with_pid(lambda P: _Reduce(S._rebuild_tensor_from_storage,
                                              (P("storage", "float32", "0", "cpu", 1000), ember.float32, 0, (2,), (1,),
                                               False)))
    with pytest.raises(RuntimeError, match="holds 16 bytes but its tensors need 4000"):
        ember.load(_archive(data, {"0": b"\x00" * 16}))
    with pytest.raises(RuntimeError, match="missing"):
        ember.load(_archive(data, {}))


def test_bad_persistent_ids_and_requires_grad_on_ints():
    bad = _pickle_with_pid(lambda P: [P("module", "x")])
    with pytest.raises(RuntimeError, match="unknown persistent id"):
        ember.load(_archive(bad))
    bad = _pickle_with_pid(lambda P: [P("storage", "complex32", "0", "cpu", 1)])
    with pytest.raises(RuntimeError, match="unknown storage type"):
        ember.load(_archive(bad, {"0": b"\x00" * 8}))
    rg = _pickle_with_pid(lambda P: _Reduce(S._rebuild_tensor_from_storage,
                                            (P("storage", "int32", "0", "cpu", 2), ember.int32, 0, (2,), (1,), True)))
    with pytest.raises(RuntimeError, match="requires_grad"):
        ember.load(_archive(rg, {"0": b"\x00" * 8}))


def test_restricted_builtins_cannot_allocate_or_decode_freely():
    class BigBytearray:
        def __reduce__(self):
            return (bytearray, (10 ** 12,))
    with pytest.raises(pickle.UnpicklingError, match="bytearray"):
        ember.load(_saved(BigBytearray()))

    class Decode:
        def __reduce__(self):
            import _codecs
            return (_codecs.encode, ("x", "rot13"))
    with pytest.raises(pickle.UnpicklingError, match="latin-1"):
        ember.load(_saved(Decode()))


def test_rebuild_of_a_non_tensor_class_is_refused():
    data = _pickle_with_pid(lambda P: _Reduce(S._rebuild_from_type, (
        collections.OrderedDict, (P("storage", "float32", "0", "cpu", 1), ember.float32, 0, (1,), (1,), False), {})))
    with pytest.raises(RuntimeError, match="not a Tensor class"):
        ember.load(_archive(data, {"0": b"\x00" * 4}))


def test_malformed_pickle_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="corrupt"):
        ember.load(_archive(b"\x80\x02}q\x00(X"))
    with pytest.raises(RuntimeError, match="malformed"):
        ember.load(_archive(b"\x80\x02\xff."))


class _Reduce:
    """Pickles as ``fn(*args)``."""

    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args
