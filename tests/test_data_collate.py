"""default_collate, default_convert, collate with a custom map, and pin_memory."""
import collections

import numpy as np
import pytest

import ember
from ember.utils.data import default_collate, default_convert
from ember.utils.data._utils.collate import collate, default_collate_fn_map
from ember.utils.data._utils.pin_memory import pin_memory

Point = collections.namedtuple("Point", ["x", "y"])


def test_numbers_follow_pytorch_dtypes():
    i = default_collate([1, 2, 3])
    assert i.dtype == ember.int64 and i.tolist() == [1, 2, 3]
    f = default_collate([1.5, 2.0])
    assert f.dtype == ember.float64 and f.tolist() == [1.5, 2.0]
    b = default_collate([True, False])
    assert b.dtype == ember.bool and b.tolist() == [True, False]


def test_numpy_arrays_and_scalars_keep_their_dtype():
    a = default_collate([np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32)])
    assert a.dtype == ember.float32 and a.shape == (2, 2, 3) and a[1].sum().item() == 6
    s = default_collate([np.int16(3), np.int16(4)])
    assert s.dtype == ember.int16 and s.tolist() == [3, 4]
    d = default_collate([np.float64(0.5)])
    assert d.dtype == ember.float64 and d.shape == (1,)


def test_tensors_are_stacked_on_a_new_first_dim():
    out = default_collate([ember.full((2,), float(i)) for i in range(3)])
    assert out.shape == (3, 2) and out[:, 0].tolist() == [0.0, 1.0, 2.0]
    ints = default_collate([ember.tensor([1], dtype=ember.int32)] * 2)
    assert ints.dtype == ember.int32


def test_strings_and_bytes_stay_lists():
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"x", b"y"]) == [b"x", b"y"]


def test_nested_structures():
    batch = [{"img": ember.zeros(2), "label": 1, "meta": {"name": "a", "w": 0.5}},
             {"img": ember.ones(2), "label": 0, "meta": {"name": "b", "w": 1.5}}]
    out = default_collate(batch)
    assert set(out) == {"img", "label", "meta"}
    assert out["img"].tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert out["label"].tolist() == [1, 0] and out["meta"]["name"] == ["a", "b"]
    assert out["meta"]["w"].dtype == ember.float64
    pts = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(pts, Point) and pts.x.tolist() == [1, 3] and pts.y.tolist() == [2.0, 4.0]
    tup = default_collate([(0, "a"), (1, "b")])
    assert isinstance(tup, list) and tup[0].tolist() == [0, 1] and tup[1] == ("a", "b")  # as PyTorch
    lst = default_collate([[1, 2], [3, 4]])
    assert isinstance(lst, list) and [t.tolist() for t in lst] == [[1, 3], [2, 4]]


def test_ordered_dict_type_is_kept():
    out = default_collate([collections.OrderedDict(b=1, a=2)] * 2)
    assert isinstance(out, collections.OrderedDict) and list(out) == ["b", "a"]


def test_collate_errors_name_what_is_wrong():
    with pytest.raises(RuntimeError,
                       match=r"default_collate: stack expects each tensor to be equal size.*\[2\].*\[3\]"):
        default_collate([ember.zeros(2), ember.zeros(3)])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size.*sample 1 has 1"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays, numbers, dicts or lists; found "
                                        "<class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(KeyError, match="sample 1 of the batch has no key 'y'"):
        default_collate([{"x": 1, "y": 2}, {"x": 3}])
    with pytest.raises(IndexError, match="empty batch"):
        default_collate([])


def test_default_convert():
    t = default_convert(np.array([1, 2], dtype=np.int32))
    assert isinstance(t, ember.Tensor) and t.dtype == ember.int32
    assert isinstance(default_convert(np.float32(2.5)), ember.Tensor)
    assert default_convert(3) == 3 and default_convert("s") == "s"
    strs = np.array(["a", "b"])
    assert default_convert(strs) is strs
    p = default_convert(Point(np.array(0), 1))
    assert isinstance(p, Point) and isinstance(p.x, ember.Tensor) and p.y == 1
    out = default_convert({"a": np.zeros(2), "b": (np.ones(1), "x")})
    assert isinstance(out["a"], ember.Tensor) and isinstance(out["b"], list) and out["b"][1] == "x"
    x = ember.zeros(2)
    assert default_convert(x) is x


def test_collate_with_a_custom_map():
    class Box:
        def __init__(self, v):
            self.v = v

    def box_fn(batch, *, collate_fn_map):
        return sum(b.v for b in batch)
    cmap = {**default_collate_fn_map, Box: box_fn}
    out = collate([(Box(1), 2), (Box(3), 4)], collate_fn_map=cmap)
    assert out[0] == 4 and out[1].tolist() == [2, 4]


class Pinnable:
    def __init__(self):
        self.pinned = False

    def pin_memory(self):
        self.pinned = True
        return self


def test_pin_memory_walks_the_batch_and_keeps_container_types():
    x = ember.ones(3)
    assert x.pin_memory() is x and not x.is_pinned()  # cpu_numpy: pinning is a no-op
    obj = Pinnable()
    out = pin_memory({"t": x, "pair": (x, "s"), "p": Point(x, obj), "l": [obj]})
    assert out["t"] is x and isinstance(out["pair"], tuple) and out["pair"][1] == "s"
    assert isinstance(out["p"], Point) and obj.pinned and out["l"][0] is obj
