"""Real PyTorch against ember's files, both ways: ``torch.load(weights_only=True)`` reads what
``ember.save(format="torch")`` writes, and ``ember.load`` reads what ``torch.save`` writes."""
import collections
import io
import pickle

import numpy as np
import pytest
import torch

import ember

PAIRS = [(ember.bool, torch.bool), (ember.uint8, torch.uint8), (ember.int8, torch.int8), (ember.int16, torch.int16),
         (ember.int32, torch.int32), (ember.int64, torch.int64), (ember.float16, torch.float16),
         (ember.bfloat16, torch.bfloat16), (ember.float32, torch.float32), (ember.float64, torch.float64)]


def e2t_bytes(obj) -> io.BytesIO:
    buf = io.BytesIO()
    ember.save(obj, buf, format="torch")
    buf.seek(0)
    return buf


def t2e_bytes(obj, **kw) -> io.BytesIO:
    buf = io.BytesIO()
    torch.save(obj, buf, **kw)
    buf.seek(0)
    return buf


def ebits(t) -> bytes:
    return np.ascontiguousarray(t.detach()._host()).view(np.uint8).tobytes()


def tbits(t) -> bytes:
    t = t.detach().contiguous().reshape(-1)   # (0-d tensors can't be viewed as bytes)
    return t.view(torch.uint8).numpy().tobytes()


def rand_host(dtype, shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) * 20
    return (a > 0) if dtype is ember.bool else a.astype(dtype.np)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p[0].name)
def test_torch_reads_every_dtype_bit_for_bit(pair):
    edt, tdt = pair
    t = ember.tensor(rand_host(edt), dtype=edt)
    back = torch.load(e2t_bytes({"t": t, "v": t[1:, ::2]}), weights_only=True)
    assert back["t"].dtype is tdt and tuple(back["t"].shape) == (3, 4) and tbits(back["t"]) == ebits(t)
    assert back["v"].stride() == (4, 2) and back["v"].storage_offset() == 4 and tbits(back["v"]) == ebits(t[1:, ::2])
    assert back["v"].untyped_storage().data_ptr() == back["t"].untyped_storage().data_ptr()


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p[0].name)
def test_ember_reads_torch_every_dtype_bit_for_bit(pair):
    edt, tdt = pair
    t = torch.from_numpy(rand_host(edt).view(np.int16)).view(torch.bfloat16) if tdt is torch.bfloat16 else \
        torch.from_numpy(rand_host(edt))
    back = ember.load(t2e_bytes({"t": t, "col": t[:, 1]}))
    assert back["t"].dtype is edt and ebits(back["t"]) == tbits(t)
    assert back["col"].untyped_storage() is back["t"].untyped_storage() and ebits(back["col"]) == tbits(t[:, 1])


def test_torch_reads_containers_and_values():
    obj = collections.OrderedDict(
        w=ember.ones(2, 3), rg=ember.tensor([1.0, 2.0], requires_grad=True), dt=ember.bfloat16,
        dev=ember.device("cpu"), cuda=ember.device("cuda", 1), size=ember.zeros(2, 5).shape,
        nested=[{"a": (ember.arange(3), 4, "s", None, b"\x01", {1, 2}, 1.5)}], empty=ember.zeros(0, 2),
        scalar=ember.tensor(7))
    back = torch.load(e2t_bytes(obj), weights_only=True)
    assert type(back) is collections.OrderedDict and list(back) == list(obj)
    assert (back["dt"] is torch.bfloat16 and back["dev"] == torch.device("cpu")
            and back["cuda"] == torch.device("cuda:1"))
    assert type(back["size"]) is torch.Size and back["size"] == (2, 5)
    assert back["rg"].requires_grad and back["rg"].is_leaf
    a = back["nested"][0]["a"]
    assert a[0].tolist() == [0, 1, 2] and a[1:] == (4, "s", None, b"\x01", {1, 2}, 1.5)
    assert back["empty"].shape == (0, 2) and back["scalar"].item() == 7


def test_torch_model_loads_an_ember_state_dict():
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    sd = collections.OrderedDict((k, ember.tensor(rand_host(ember.from_numpy(v.numpy()).dtype, tuple(v.shape), i)))
                                 for i, (k, v) in enumerate(tm.state_dict().items()))
    tm.load_state_dict(torch.load(e2t_bytes(sd), weights_only=True))
    for k, v in tm.state_dict().items():
        assert tbits(v) == ebits(sd[k]), k


def test_torch_mmap_reads_ember_files(tmp_path):
    t = ember.arange(1000.0).reshape(10, 100)
    ember.save({"t": t, "u": ember.ones(3, dtype=ember.int8)}, tmp_path / "m.pt", format="torch")
    back = torch.load(tmp_path / "m.pt", weights_only=True, mmap=True)
    assert tbits(back["t"]) == ebits(t) and back["u"].tolist() == [1, 1, 1]


def test_torch_map_location_on_ember_files():
    back = torch.load(e2t_bytes({"t": ember.ones(2)}), weights_only=True, map_location="meta")
    assert back["t"].device.type == "meta" and back["t"].shape == (2,)


def test_ember_default_format_is_not_for_torch():
    buf = io.BytesIO()
    ember.save({"t": ember.ones(2)}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="ember"):
        torch.load(buf, weights_only=True)


def test_mixed_dtype_views_cannot_be_written_in_torch_format():
    raw = ember.arange(4, dtype=ember.int32)
    f = ember._tensor._make(raw._storage, (4,), (1,), 0, ember.float32, raw.device)
    with pytest.raises(RuntimeError, match="format='ember'"):
        ember.save([raw, f], io.BytesIO(), format="torch")


def test_ember_reads_live_torch_checkpoints():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.Flatten(),
                                torch.nn.Linear(3 * 4 * 4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(2, 2, 6, 6)).sum().backward()
    opt.step()
    ck = {"epoch": 7, "model_state_dict": model.state_dict(), "optimizer_state_dict": opt.state_dict(),
          "loss": torch.tensor(0.125), "params": list(model.parameters())}
    for kw in ({}, {"pickle_protocol": 4}, {"_disable_byteorder_record": True}):
        back = ember.load(t2e_bytes(ck, **kw))
        assert back["epoch"] == 7 and back["loss"].item() == 0.125
        for k, v in model.state_dict().items():
            assert ebits(back["model_state_dict"][k]) == tbits(v), k
        assert back["optimizer_state_dict"]["param_groups"][0]["momentum"] == 0.9
        mom = back["optimizer_state_dict"]["state"][0]["momentum_buffer"]
        assert ebits(mom) == tbits(opt.state_dict()["state"][0]["momentum_buffer"])
        assert all(p.requires_grad for p in back["params"])


def test_ember_reads_torch_files_through_mmap(tmp_path):
    t = torch.arange(100, dtype=torch.float64).reshape(10, 10)
    torch.save({"t": t, "row": t[3]}, tmp_path / "t.pt")
    back = ember.load(tmp_path / "t.pt", mmap=True)
    assert ebits(back["t"]) == tbits(t) and back["row"].untyped_storage() is back["t"].untyped_storage()


def test_torch_reads_ember_parameters_and_model_state_dicts():
    import ember.nn as nn
    ember.manual_seed(0)
    em = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Linear(3, 2))
    frozen = nn.Parameter(ember.ones(2), requires_grad=False)
    back = torch.load(e2t_bytes({"sd": em.state_dict(), "params": list(em.parameters()), "frozen": frozen}),
                      weights_only=True)
    assert all(isinstance(p, torch.nn.Parameter) and p.requires_grad for p in back["params"])
    assert isinstance(back["frozen"], torch.nn.Parameter) and not back["frozen"].requires_grad
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    tm.load_state_dict(back["sd"])
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    em.eval(), tm.eval()
    np.testing.assert_allclose(tm(torch.from_numpy(x)).detach().numpy(), em(ember.tensor(x)).detach().numpy(),
                               rtol=1e-6, atol=1e-6)
