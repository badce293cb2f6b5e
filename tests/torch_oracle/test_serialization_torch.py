"""Real PyTorch against ember's files, both ways: ``torch.load`` with its defaults
(``weights_only=True``) reads what ``ember.save`` writes by default (and with ``format="torch"``),
and ``ember.load`` reads what ``torch.save`` writes."""
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


def e2t_bytes(obj, **kw) -> io.BytesIO:
    buf = io.BytesIO()
    ember.save(obj, buf, **kw)
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


FORMATS = [{}, {"format": "torch"}]


@pytest.mark.parametrize("kw", FORMATS, ids=["default", "torch"])
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p[0].name)
def test_torch_reads_every_dtype_bit_for_bit(pair, kw, tmp_path):
    edt, tdt = pair
    t = ember.tensor(rand_host(edt), dtype=edt)
    obj = {"t": t, "v": t[1:, ::2], "tt": t.t(), "s": t[2, 3], "e": t[:0], "z": ember.zeros((), dtype=edt)}
    ember.save(obj, tmp_path / "f.pt", **kw)
    for back in (torch.load(tmp_path / "f.pt"), torch.load(tmp_path / "f.pt", weights_only=False)):
        assert back["t"].dtype is tdt and tuple(back["t"].shape) == (3, 4) and tbits(back["t"]) == ebits(t)
        assert back["v"].stride() == (4, 2) and back["v"].storage_offset() == 4
        assert tbits(back["v"]) == ebits(t[1:, ::2])
        assert back["tt"].stride() == (1, 4) and not back["tt"].is_contiguous() and tbits(back["tt"]) == ebits(t.t())
        assert back["s"].shape == () and back["s"].storage_offset() == 11 and tbits(back["s"]) == ebits(t[2, 3])
        assert back["e"].shape == (0, 4) and back["z"].shape == () and back["z"].dtype is tdt
        ptr = back["t"].untyped_storage().data_ptr()
        assert all(back[k].untyped_storage().data_ptr() == ptr for k in ("v", "tt", "s", "e"))
        back["t"][1, 0] = 0
        assert tbits(back["v"][0, 0]) == tbits(back["t"][1, 0])   # one storage, as saved


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p[0].name)
def test_ember_reads_torch_every_dtype_bit_for_bit(pair):
    edt, tdt = pair
    t = torch.from_numpy(rand_host(edt).view(np.int16)).view(torch.bfloat16) if tdt is torch.bfloat16 else \
        torch.from_numpy(rand_host(edt))
    back = ember.load(t2e_bytes({"t": t, "col": t[:, 1]}))
    assert back["t"].dtype is edt and ebits(back["t"]) == tbits(t)
    assert back["col"].untyped_storage() is back["t"].untyped_storage() and ebits(back["col"]) == tbits(t[:, 1])


@pytest.mark.parametrize("kw", FORMATS, ids=["default", "torch"])
def test_torch_reads_containers_and_values(kw):
    obj = collections.OrderedDict(
        w=ember.ones(2, 3), rg=ember.tensor([1.0, 2.0], requires_grad=True), dt=ember.bfloat16,
        dev=ember.device("cpu"), cuda=ember.device("cuda", 1), size=ember.zeros(2, 5).shape,
        nested=[{"a": (ember.arange(3), 4, "s", None, b"\x01", {1, 2}, 1.5)}], empty=ember.zeros(0, 2),
        scalar=ember.tensor(7))
    back = torch.load(e2t_bytes(obj, **kw))
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
    tm.load_state_dict(torch.load(e2t_bytes(sd)))
    for k, v in tm.state_dict().items():
        assert tbits(v) == ebits(sd[k]), k


def test_torch_resumes_from_an_ember_checkpoint(tmp_path):
    """A model and optimizer checkpoint saved by ember, loaded by torch.load with its defaults into
    the same PyTorch model and optimizer: the weights and Adam's state are ember's, bit for bit."""
    import ember.nn as nn
    ember.manual_seed(0)
    em = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    eopt = ember.optim.Adam(em.parameters(), lr=1e-2)
    for _ in range(2):
        eopt.zero_grad()
        em(ember.randn(5, 4)).square().mean().backward()
        eopt.step()
    ember.save({"epoch": 2, "model": em.state_dict(), "optim": eopt.state_dict(), "params": list(em.parameters())},
               tmp_path / "ck.pt")
    ck = torch.load(tmp_path / "ck.pt")
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    topt = torch.optim.Adam(tm.parameters(), lr=1e-2)
    tm.load_state_dict(ck["model"])
    topt.load_state_dict(ck["optim"])
    assert ck["epoch"] == 2 and all(isinstance(p, torch.nn.Parameter) for p in ck["params"])
    for k, v in tm.state_dict().items():
        assert tbits(v) == ebits(em.state_dict()[k]), k
    es, ts = eopt.state_dict(), topt.state_dict()
    assert ts["param_groups"][0]["lr"] == 1e-2 and ts["param_groups"][0]["betas"] == (0.9, 0.999)
    for i, st in es["state"].items():
        for name in ("exp_avg", "exp_avg_sq", "step"):
            assert tbits(ts["state"][i][name]) == ebits(st[name]), (i, name)
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(tm(torch.from_numpy(x)).detach().numpy(), em(ember.tensor(x)).detach().numpy(),
                               rtol=1e-6, atol=1e-6)


def test_torch_mmap_reads_ember_files(tmp_path):
    t = ember.arange(1000.0).reshape(10, 100)
    ember.save({"t": t, "u": ember.ones(3, dtype=ember.int8)}, tmp_path / "m.pt")
    back = torch.load(tmp_path / "m.pt", mmap=True)
    assert tbits(back["t"]) == ebits(t) and back["u"].tolist() == [1, 1, 1]


def test_torch_map_location_on_ember_files():
    back = torch.load(e2t_bytes({"t": ember.ones(2)}), map_location="meta")
    assert back["t"].device.type == "meta" and back["t"].shape == (2,)


def test_torch_reads_tensor_attributes():
    t = ember.arange(3.0)
    t.note = "kept"
    back = torch.load(e2t_bytes({"t": t}))
    assert back["t"].note == "kept" and back["t"].tolist() == [0.0, 1.0, 2.0]


def test_ember_format_is_not_for_torch():
    """``format="ember"`` (the old default) names ember's functions: torch refuses them, and
    ``ember.save`` falls back to it only for what PyTorch's format cannot hold."""
    with pytest.raises(pickle.UnpicklingError, match="ember"):
        torch.load(e2t_bytes({"t": ember.ones(2)}, format="ember"))
    raw = ember.arange(4, dtype=ember.int32)
    f = ember._tensor._make(raw._storage, (4,), (1,), 0, ember.float32, raw.device)
    with pytest.raises(pickle.UnpicklingError, match="ember"):   # refused, never misread
        torch.load(e2t_bytes([raw, f]))
    back = ember.load(e2t_bytes([raw, f]))
    assert back[0].tolist() == [0, 1, 2, 3] and back[1].untyped_storage() is back[0].untyped_storage()


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
    back = torch.load(e2t_bytes({"sd": em.state_dict(), "params": list(em.parameters()), "frozen": frozen}))
    assert all(isinstance(p, torch.nn.Parameter) and p.requires_grad for p in back["params"])
    assert isinstance(back["frozen"], torch.nn.Parameter) and not back["frozen"].requires_grad
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    tm.load_state_dict(back["sd"])
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    em.eval(), tm.eval()
    np.testing.assert_allclose(tm(torch.from_numpy(x)).detach().numpy(), em(ember.tensor(x)).detach().numpy(),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kw", [{}, {"pickle_protocol": 4}, {"_use_new_zipfile_serialization": True}])
def test_ember_reads_torch_save_and_round_trips_back(kw, tmp_path):
    """torch.save -> ember.load -> ember.save -> torch.load gives torch's tensors back."""
    torch.manual_seed(0)
    base = torch.randn(4, 5)
    obj = {"w": base, "col": base[:, 2], "t": base.t(), "b": torch.tensor([True, False]),
           "h": torch.randn(3).to(torch.bfloat16), "i": torch.arange(6).reshape(2, 3)[:, ::2], "z": torch.tensor(3.0),
           "nested": [(torch.ones(2, dtype=torch.int8), {"e": torch.empty(0, 3)})],
           "p": torch.nn.Parameter(torch.ones(2))}
    torch.save(obj, tmp_path / "a.pt", **kw)
    mid = ember.load(tmp_path / "a.pt")
    ember.save(mid, tmp_path / "b.pt")
    back = torch.load(tmp_path / "b.pt")
    for k in ("w", "col", "t", "b", "h", "i", "z"):
        assert back[k].dtype == obj[k].dtype and back[k].stride() == obj[k].stride(), k
        assert back[k].storage_offset() == obj[k].storage_offset() and tbits(back[k]) == tbits(obj[k]), k
    assert back["col"].untyped_storage().data_ptr() == back["w"].untyped_storage().data_ptr()
    assert back["nested"][0][0].tolist() == [1, 1] and back["nested"][0][1]["e"].shape == (0, 3)
    assert isinstance(back["p"], torch.nn.Parameter) and back["p"].requires_grad
