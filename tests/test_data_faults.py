"""DataLoader faults: worker exceptions, dying workers, timeouts, and that no worker process
outlives its loader (break, del, garbage collection, Ctrl-C, a dead main process)."""
import gc
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import ember
from ember.utils.data import DataLoader, Dataset, default_collate
from test_data_workers import alive, shm_left, wait_gone


class Failing(Dataset):
    """Item 5 raises ``exc``."""

    def __init__(self, exc):
        self.exc = exc

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise self.exc
        return i


class NeedsTwoArgs(Exception):
    def __init__(self, a, b):
        super().__init__(f"{a}/{b}")


class Exits(Dataset):
    """Item ``at`` ends its worker: ``os._exit(code)``, or a signal with ``code < 0``."""

    def __init__(self, at=3, code=3):
        self.at, self.code = at, code

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == self.at:
            if self.code < 0:
                os.kill(os.getpid(), -self.code)
                time.sleep(5)
            os._exit(self.code)
        return i


class Sleepy(Dataset):
    def __init__(self, seconds, n=64):
        self.seconds, self.n = seconds, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.seconds)
        return i


def collate_then_die(batch):
    out = default_collate([ember.full((4,), float(b)) for b in batch])  # in a worker: a new shm segment
    os.kill(os.getpid(), signal.SIGKILL)
    return out


def exit_in_init(worker_id):
    os._exit(9)


def fail_in_init(worker_id):
    raise OSError(f"cannot open shard {worker_id}")


def test_worker_exception_keeps_its_type_and_traceback():
    with pytest.raises(ValueError) as info:
        list(DataLoader(Failing(ValueError("bad sample")), batch_size=2, num_workers=2))
    msg = str(info.value)
    assert "Caught ValueError in DataLoader worker process 0" in msg
    assert "Traceback (most recent call last)" in msg and "in __getitem__" in msg and "raise self.exc" in msg
    assert "ValueError: bad sample" in msg


def test_key_error_message_is_readable():
    with pytest.raises(KeyError) as info:
        list(DataLoader(Failing(KeyError("missing")), num_workers=1))
    assert "Caught KeyError in DataLoader worker process 0" in str(info.value)
    assert "\\n" not in str(info.value)  # real newlines, not an escaped repr


def test_exception_that_cannot_be_rebuilt_becomes_runtime_error():
    with pytest.raises(RuntimeError, match=r"(?s)Caught NeedsTwoArgs in DataLoader worker.*NeedsTwoArgs: x/y"):
        list(DataLoader(Failing(NeedsTwoArgs("x", "y")), num_workers=1))

    class Local(Exception):  # cannot be pickled by reference
        pass
    with pytest.raises(RuntimeError, match=r"Caught test_exception_that_cannot_be_rebuilt_becomes_runtime_error"
                                           r".<locals>.Local"):
        list(DataLoader(Failing(Local("z")), num_workers=1, multiprocessing_context="fork"))


def test_iteration_goes_on_after_a_worker_exception():
    it = iter(DataLoader(Failing(IndexError("x")), batch_size=2, num_workers=2))
    assert next(it).tolist() == [0, 1] and next(it).tolist() == [2, 3]
    with pytest.raises(IndexError):
        next(it)
    assert next(it).tolist() == [6, 7]


def test_worker_init_fn_exception_is_reraised():
    with pytest.raises(OSError, match="cannot open shard 0"):
        list(DataLoader(Failing(ValueError()), num_workers=1, worker_init_fn=fail_in_init))


@pytest.mark.parametrize("code, expect", [(3, "exit code 3"), (-signal.SIGKILL, "killed by signal SIGKILL")])
def test_dead_worker_raises_runtime_error_with_pid_and_exit_code(code, expect):
    it = iter(DataLoader(Exits(at=3, code=code), batch_size=1, num_workers=2))
    pids = it._worker_pids
    t0 = time.monotonic()
    with pytest.raises(RuntimeError) as info:
        list(it)
    assert time.monotonic() - t0 < 5
    msg = str(info.value)
    assert "exited unexpectedly" in msg and expect in msg
    assert any(f"(pid {p})" in msg for p in pids)
    assert wait_gone(pids) == []
    with pytest.raises(RuntimeError, match="shut down"):
        next(it)


def test_worker_killed_while_making_a_batch_leaves_no_shared_memory():
    it = iter(DataLoader(Sleepy(0, n=4), batch_size=2, num_workers=1, collate_fn=collate_then_die))
    pids = it._worker_pids
    with pytest.raises(RuntimeError, match="SIGKILL"):
        next(it)
    assert wait_gone(pids) == [] and shm_left(pids) == []


def test_worker_dying_in_init_is_reported():
    with pytest.raises(RuntimeError, match="exited unexpectedly with exit code 9"):
        list(DataLoader(Sleepy(0), num_workers=1, worker_init_fn=exit_in_init))


def test_worker_killed_from_outside_is_noticed_within_seconds():
    it = iter(DataLoader(Sleepy(0.05), num_workers=2))
    next(it)
    victim = it._worker_pids[1]
    os.kill(victim, signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=f"pid {victim}\\) exited unexpectedly.*SIGKILL"):
        for _ in it:
            pass
    assert time.monotonic() - t0 < 5 and wait_gone(it._worker_pids) == []


def test_timeout_raises_runtime_error(short_grace):
    it = iter(DataLoader(Sleepy(3), num_workers=1, timeout=0.3))
    pids = it._worker_pids
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        next(it)
    assert time.monotonic() - t0 < 2.5
    del it
    assert wait_gone(pids) == []


@pytest.fixture
def short_grace(monkeypatch):
    from ember.utils.data import _utils
    monkeypatch.setattr(_utils, "SHUTDOWN_GRACE", 0.3)


def test_break_out_of_the_loop_stops_the_workers(short_grace):
    before = {p.pid for p in multiprocessing.active_children()}
    loader = DataLoader(Sleepy(0.01), batch_size=2, num_workers=2)
    for batch in loader:
        pids = [p.pid for p in multiprocessing.active_children() if p.pid not in before]
        break
    # the iterator was the for statement's own: dropping it stops its workers at once
    assert len(pids) == 2 and wait_gone(pids) == [] and shm_left(pids) == []


def test_break_while_a_worker_is_busy_terminates_it(short_grace):
    it = iter(DataLoader(Sleepy(30, n=4), num_workers=2))
    pids = it._worker_pids
    time.sleep(0.2)  # both workers are inside a 30 s __getitem__
    t0 = time.monotonic()
    del it
    assert wait_gone(pids) == [] and time.monotonic() - t0 < 3


def test_deleting_a_loader_with_persistent_workers_stops_them():
    loader = DataLoader(Sleepy(0), batch_size=4, num_workers=2, persistent_workers=True)
    assert len(list(loader)) == 16
    pids = loader._iterator._worker_pids
    assert all(alive(p) for p in pids)
    del loader
    assert wait_gone(pids) == []


def test_garbage_collected_cycle_stops_the_workers():
    class Holder:
        pass
    h = Holder()
    h.self = h  # a reference cycle: only the cycle collector frees it
    h.it = iter(DataLoader(Sleepy(0), num_workers=2))
    next(h.it)
    pids = h.it._worker_pids
    del h
    gc.collect()
    assert wait_gone(pids) == []


def test_keyboard_interrupt_leaves_no_workers(short_grace):
    it = iter(DataLoader(Sleepy(0.5), num_workers=2))
    pids = it._worker_pids

    stopped = threading.Event()
    consumed = [0]

    def ctrl_c():  # Ctrl-C signals the whole foreground process group
        time.sleep(0.2)
        for p in pids:
            os.kill(p, signal.SIGINT)
        # python drops a KeyboardInterrupt its handler raises inside a finalizer (__del__, a weakref
        # callback) that happens to run at that moment: while the loop goes on consuming batches,
        # the interrupt did not land, so press Ctrl-C again, as a user would
        for _ in range(10):
            seen = consumed[0]
            os.kill(os.getpid(), signal.SIGINT)
            if stopped.wait(2.0) or consumed[0] == seen:
                return
    threading.Thread(target=ctrl_c).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            for _ in it:
                consumed[0] += 1
    finally:
        stopped.set()
    assert wait_gone(pids) == []


class InterruptsWhenPinned:
    def pin_memory(self):
        raise KeyboardInterrupt


class Pinned(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return InterruptsWhenPinned()


def test_keyboard_interrupt_outside_the_wait_also_stops_the_workers(short_grace):
    it = iter(DataLoader(Pinned(), batch_size=None, num_workers=2, pin_memory=True))
    pids = it._worker_pids
    with pytest.raises(KeyboardInterrupt):
        next(it)  # raised while pinning the batch in the main process
    assert wait_gone(pids) == []  # though `it` is still referenced here


def test_workers_exit_when_the_main_process_dies():
    script = textwrap.dedent("""
        import os, signal, sys, time
        sys.path.insert(0, %r)
        from ember.utils.data import DataLoader
        from test_data_faults import Sleepy
        it = iter(DataLoader(Sleepy(0.05), num_workers=2))
        next(it)
        print(*it._worker_pids, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """) % os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2, out.stderr
    assert wait_gone(pids, timeout=8) == []
