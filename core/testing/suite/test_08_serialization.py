"""Tier 8, serialization: ember.save of tensors on the device under test, and ember.load back onto
it, onto cpu (``map_location``) and from cpu onto it. Storages come back to the backend through
its own ``from_numpy`` and leave it through ``to_numpy``, so this checks those verbs too."""
import io

import numpy as np
import pytest

import ember
from ember.testing.helpers import supports

ALL = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float16, ember.bfloat16,
       ember.float32, ember.float64]


def _save(obj, **kw) -> io.BytesIO:
    buf = io.BytesIO()
    ember.save(obj, buf, **kw)
    buf.seek(0)
    return buf


def _host_bits(t) -> bytes:
    return np.ascontiguousarray(t.detach().numpy(force=True)).view(np.uint8).tobytes()


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
def test_save_on_device_load_back(device, dtype):
    if not supports(device, dtype):
        return
    host = (np.arange(12).reshape(3, 4) * 7 % 5 - 2).astype(np.float64)
    arr = (host > 0) if dtype is ember.bool else host.astype(dtype.np)
    t = ember.tensor(arr, dtype=dtype, device=device)
    back = ember.load(_save({"t": t}))["t"]
    assert back.device == t.device and back.dtype is dtype and back.shape == (3, 4)
    assert _host_bits(back) == _host_bits(t)


def test_views_on_device_share_storage_after_load(device):
    base = ember.arange(20.0, device=device).reshape(4, 5)
    back = ember.load(_save({"base": base, "col": base[:, 3], "t": base.t()}))
    assert back["col"].untyped_storage() is back["base"].untyped_storage() is back["t"].untyped_storage()
    assert back["t"].stride() == (1, 5) and back["col"].storage_offset() == 3
    assert back["col"].tolist() == [3.0, 8.0, 13.0, 18.0]


@pytest.mark.ember_requires(cpu=True)
def test_map_location_cpu_and_onto_the_device(device):
    t = ember.arange(6.0, device=device).reshape(2, 3)
    t.requires_grad_(True)
    on_cpu = ember.load(_save([t]), map_location="cpu")[0]
    assert on_cpu.device.type == "cpu" and on_cpu.requires_grad and on_cpu.tolist() == [[0, 1, 2], [3, 4, 5]]
    moved = ember.load(_save([on_cpu.detach()]), map_location=device)[0]
    assert moved.device == t.device and moved.tolist() == [[0, 1, 2], [3, 4, 5]]
    loc = str(t.device)
    remapped = ember.load(_save([t.detach()]), map_location={loc: "cpu"})[0]
    assert remapped.device.type == "cpu"
    seen = []
    by_fn = ember.load(_save([t.detach()]), map_location=lambda s, where: seen.append(where))[0]
    assert seen == [loc] and by_fn.device == t.device


def test_torch_format_on_device(device):
    t = ember.arange(4.0, device=device)
    back = ember.load(_save({"t": t, "v": t[1:]}, format="torch"))
    assert back["t"].device == t.device and back["v"].tolist() == [1.0, 2.0, 3.0]
    assert back["v"].untyped_storage() is back["t"].untyped_storage()


def test_state_dict_shaped_checkpoint(device):
    ck = {"epoch": 2, "model_state_dict": {"w": ember.ones(2, 2, device=device), "b": ember.zeros(2, device=device)},
          "optimizer_state_dict": {"state": {0: {"step": ember.tensor(3.0)}},
                                   "param_groups": [{"lr": 0.1, "params": [0]}]},
          "loss": 0.5}
    back = ember.load(_save(ck))
    assert back["epoch"] == 2 and back["loss"] == 0.5
    assert back["model_state_dict"]["w"].device == ck["model_state_dict"]["w"].device
    assert back["optimizer_state_dict"]["param_groups"] == [{"lr": 0.1, "params": [0]}]
    assert back["optimizer_state_dict"]["state"][0]["step"].item() == 3.0
