"""ember.multiprocessing: storages in shared memory (share_memory_, is_shared), tensors crossing
queues shared (not copied), Hogwild training of one shared model with fork and spawn, spawn()'s
error propagation, sharing strategies, and no leaked segments or descriptors.

Process targets live at module level so that ``spawn`` children can import them.
"""
import gc
import multiprocessing as std_mp
import os
import pickle

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp
from ember import nn
from ember.multiprocessing.reductions import ForkingPickler

METHODS = [m for m in ("fork", "spawn") if m in std_mp.get_all_start_methods()]


def _shm_names():
    return {f for f in os.listdir("/dev/shm") if f.startswith("ember_mp_")} if os.path.isdir("/dev/shm") else set()


def _fds():
    return len(os.listdir("/proc/self/fd"))


# -- process targets -----------------------------------------------------------------------------
def _add_one(q_in, q_out):
    t = q_in.get()
    q_out.put((t.is_shared(), t.tolist()))
    t.add_(1)
    q_out.put("done")


def _views(q_in, q_out):
    a, b = q_in.get()
    c = q_in.get()
    q_out.put((a.untyped_storage() is b.untyped_storage(), a.untyped_storage() is c.untyped_storage(),
               type(c).__name__, c.requires_grad, b.storage_offset()))
    b.fill_(7)  # a view: the parent's row 1 becomes 7
    q_out.put("done")


def _train(rank, model, lock, steps):
    opt = ember.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(steps):
        opt.zero_grad()
        model.weight.grad = ember.ones_like(model.weight)
        model.bias.grad = ember.full_like(model.bias, float(rank + 1))
        with lock:
            opt.step()


def _hogwild(rank, model, x, y):
    ember.manual_seed(rank)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(30):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def _fill_index(i, t):
    t[i] = i + 10


def _raise_in(i, bad):
    if i == bad:
        raise ValueError(f"boom in process {i}")


def _exit_with(i, code):
    if i == 1:
        os._exit(code)


def _double(t):
    return t * 2


# -- share_memory_ in one process -----------------------------------------------------------------
def test_share_memory_moves_the_storage_in_place_and_keeps_views():
    x = ember.arange(6.0).reshape(2, 3)
    row = x[1]
    _ = row + 0  # caches the row's numpy view over the old buffer
    s, ptr = x.untyped_storage(), x.data_ptr()
    assert not x.is_shared() and not s.is_shared()
    assert x.share_memory_() is x
    assert x.is_shared() and row.is_shared() and s.is_shared()
    assert x.untyped_storage() is s and x.data_ptr() != ptr
    row.add_(10)  # through the stale view: must write the shared buffer
    assert x.tolist() == [[0.0, 1.0, 2.0], [13.0, 14.0, 15.0]]
    x.mul_(2)
    assert row.tolist() == [26.0, 28.0, 30.0]
    assert (x @ ember.ones(3)).tolist() == [6.0, 84.0]
    assert x.share_memory_() is x and x.data_ptr() == x.untyped_storage().data_ptr()  # no-op the second time
    assert not (x + 1).is_shared()  # results are ordinary tensors


def test_untyped_storage_share_memory_and_module_share_memory():
    s = ember.zeros(4).untyped_storage()
    assert s.share_memory_() is s and s.is_shared()
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    w = m[0].weight
    assert m.share_memory() is m
    assert m[0].weight is w  # the Parameter objects stay (optimizers hold them)
    assert all(p.is_shared() for p in m.parameters()) and all(b.is_shared() for b in m.buffers())


def test_a_shared_storage_cannot_grow():
    t = ember.zeros(3).share_memory_()
    with pytest.raises(RuntimeError, match="not resizable"):
        t.resize_(10)
    t.resize_(2)  # shrinking keeps the storage
    assert t.is_shared()


def test_a_backend_without_shared_memory_says_so():
    be = ember.backend.Backend()
    be.device_type = "opencl"
    with pytest.raises(RuntimeError, match="share_memory_ is not supported on device opencl"):
        be.share_memory_(ember.zeros(1).untyped_storage())
    assert be.is_shared(None) is False and be.supports_sharing is False


def test_non_leaf_tensors_requiring_grad_are_refused():
    a = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        ForkingPickler.dumps(a * 2)


def test_plain_pickle_still_copies():
    t = ember.ones(3).share_memory_()
    u = pickle.loads(pickle.dumps(t))
    assert not u.is_shared() and u.tolist() == [1.0, 1.0, 1.0]


def test_a_storage_sent_back_to_its_owner_is_the_same_object():
    t = ember.ones(3)
    u = ForkingPickler.loads(ForkingPickler.dumps(t))  # the fd round trip within one process
    assert t.is_shared() and u.untyped_storage() is t.untyped_storage()


def test_freed_shared_storages_close_their_descriptors():
    gc.collect()
    before = _fds()
    ts = [ember.zeros(100).share_memory_() for _ in range(20)]
    assert _fds() > before
    del ts
    gc.collect()
    assert _fds() == before


# -- across processes -------------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_a_tensor_put_on_a_queue_arrives_shared(method):
    ctx = mp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    t = ember.tensor([1.0, 2.0, 3.0])  # not shared yet: put moves it to shared memory
    p = ctx.Process(target=_add_one, args=(q_in, q_out))
    p.start()
    q_in.put(t)
    assert q_out.get(timeout=30) == (True, [1.0, 2.0, 3.0])
    assert q_out.get(timeout=30) == "done"
    p.join(30)
    assert p.exitcode == 0
    assert t.is_shared() and t.tolist() == [2.0, 3.0, 4.0]  # the child's write


@pytest.mark.parametrize("method", METHODS)
def test_views_and_parameters_keep_their_storage_across_a_queue(method):
    ctx = mp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    x = ember.zeros(3, 2)
    w = nn.Parameter(x[2])
    p = ctx.Process(target=_views, args=(q_in, q_out))
    p.start()
    q_in.put((x, x[1]))
    q_in.put(w)
    assert q_out.get(timeout=30) == (True, True, "Parameter", True, 2)
    assert q_out.get(timeout=30) == "done"
    p.join(30)
    assert x.tolist() == [[0.0, 0.0], [7.0, 7.0], [0.0, 0.0]]


@pytest.mark.parametrize("method", METHODS)
def test_processes_update_the_parents_shared_model(method):
    ctx = mp.get_context(method)
    model = nn.Linear(2, 1)
    with ember.no_grad():
        model.weight.fill_(1.0)
        model.bias.fill_(0.0)
    model.share_memory()
    lock = ctx.Lock()
    procs = [ctx.Process(target=_train, args=(r, model, lock, 3)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    # each process took 3 SGD steps of lr 0.5: weight grad 1, bias grad rank + 1
    assert model.weight.tolist() == [[-2.0, -2.0]]
    assert model.bias.tolist() == [-4.5]


def test_hogwild_training_lowers_the_parents_loss():
    ctx = mp.get_context(METHODS[0])
    ember.manual_seed(0)
    model = nn.Linear(4, 1)
    x = ember.randn(32, 4)
    y = x @ ember.tensor([[1.0], [-2.0], [0.5], [3.0]])
    before = nn.functional.mse_loss(model(x), y).item()
    model.share_memory()
    procs = [ctx.Process(target=_hogwild, args=(r, model, x, y)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert nn.functional.mse_loss(model(x), y).item() < before / 4


def test_pool_results_arrive_as_tensors():
    with mp.get_context(METHODS[0]).Pool(2) as pool:
        out = pool.map(_double, [ember.ones(2), ember.arange(3.0)])
    assert [o.tolist() for o in out] == [[2.0, 2.0], [0.0, 2.0, 4.0]]


def test_spawn_calls_fn_with_the_index_and_args():
    t = ember.zeros(3).share_memory_()
    assert mp.spawn(_fill_index, args=(t,), nprocs=3) is None
    assert t.tolist() == [10.0, 11.0, 12.0]


def test_spawn_raises_the_childs_exception():
    with pytest.raises(mp.ProcessRaisedException, match="boom in process 1") as e:
        mp.spawn(_raise_in, args=(1,), nprocs=2)
    assert e.value.error_index == 1 and "ValueError" in str(e.value)


def test_start_processes_reports_an_exit_code():
    with pytest.raises(mp.ProcessExitedException, match="process 1 terminated with exit code 3") as e:
        mp.start_processes(_exit_with, args=(3,), nprocs=2, start_method=METHODS[0])
    assert e.value.exit_code == 3 and e.value.error_index == 1
    ctx = mp.start_processes(_fill_index, args=(ember.zeros(1).share_memory_(),), nprocs=1, join=False,
                             start_method=METHODS[0])
    assert isinstance(ctx, mp.ProcessContext) and len(ctx.pids()) == 1
    while not ctx.join():
        pass


# -- the module and its strategies -------------------------------------------------------------------
def test_the_module_mirrors_multiprocessing():
    for name in ("Process", "Queue", "SimpleQueue", "Pool", "get_context", "set_start_method", "get_start_method",
                 "get_all_start_methods", "spawn", "start_processes", "ProcessContext"):
        assert hasattr(mp, name), name
    assert mp.get_context("spawn").get_start_method() == "spawn"
    assert set(std_mp.__all__) <= set(mp.__all__)


def test_sharing_strategies():
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    with pytest.raises(AssertionError, match="invalid sharing strategy"):
        mp.set_sharing_strategy("bogus")


@pytest.mark.parametrize("method", METHODS)
def test_file_system_strategy_shares_and_leaves_nothing_in_dev_shm(method):
    before = _shm_names()
    mp.set_sharing_strategy("file_system")
    try:
        ctx = mp.get_context(method)
        q_in, q_out = ctx.Queue(), ctx.Queue()
        t = ember.tensor([5.0, 6.0])
        p = ctx.Process(target=_add_one, args=(q_in, q_out))
        p.start()
        q_in.put(t)
        assert q_out.get(timeout=30) == (True, [5.0, 6.0])
        assert q_out.get(timeout=30) == "done"
        p.join(30)
        assert t.tolist() == [6.0, 7.0]
        assert len(_shm_names() - before) == 1  # the name lives as long as the creator's storage
    finally:
        mp.set_sharing_strategy("file_descriptor")
    del t
    gc.collect()
    assert _shm_names() == before


def test_file_descriptor_strategy_never_names_a_segment():
    before = _shm_names()
    t = ember.ones(1000).share_memory_()
    assert _shm_names() == before and np.asarray(t.numpy()).sum() == 1000
