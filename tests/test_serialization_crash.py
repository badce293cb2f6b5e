"""Crash safety of ember.save (a failed, interrupted or killed save leaves the previous file) and
clear errors for truncated and corrupt files."""
import errno
import io
import os
import signal
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import ember
from ember.serialization import _archive as A

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _temps(d):
    return sorted(n for n in os.listdir(d) if n.endswith(A._TMP_SUFFIX))


@pytest.fixture
def previous(tmp_path):
    """A good checkpoint already at the target path."""
    path = tmp_path / "ckpt.pt"
    ember.save({"version": 1, "w": ember.arange(4.0)}, path)
    return path


def _assert_previous_intact(path):
    back = ember.load(path)
    assert back["version"] == 1 and back["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert _temps(path.parent) == []


def test_unpicklable_object_leaves_the_previous_file(previous):
    import threading
    with pytest.raises(TypeError, match="lock") as e:
        ember.save({"version": 2, "lock": threading.Lock()}, previous)
    assert any("nothing was written" in n for n in getattr(e.value, "__notes__", []))
    _assert_previous_intact(previous)


def test_unpicklable_object_never_touches_a_file_object():
    buf = io.BytesIO(b"keep")
    with pytest.raises(Exception):
        ember.save({"f": lambda: 0}, buf)
    assert buf.getvalue() == b"keep"


class _FullDisk:
    """A file whose writes fail with ENOSPC once ``limit`` bytes are written."""

    def __init__(self, real, limit):
        self.real, self.limit, self.n = real, limit, 0

    def write(self, b):
        n = memoryview(b).nbytes
        if self.n + n > self.limit:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.n += n
        return self.real.write(b)

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.mark.parametrize("limit", [0, 100, 5000])
def test_full_disk_midway_leaves_the_previous_file(previous, monkeypatch, limit):
    monkeypatch.setattr(A, "_fdopen", lambda fd, mode: _FullDisk(os.fdopen(fd, mode), limit))
    with pytest.raises(OSError, match="No space left"):
        ember.save({"version": 2, "w": ember.zeros(10_000)}, previous)
    monkeypatch.undo()
    _assert_previous_intact(previous)


def test_failure_in_fsync_or_rename_cleans_up(previous, monkeypatch):
    def boom(*a):
        raise OSError(errno.EIO, "I/O error")
    monkeypatch.setattr(A.os, "fsync", boom)
    with pytest.raises(OSError, match="I/O error"):
        ember.save({"version": 2}, previous)
    monkeypatch.undo()
    _assert_previous_intact(previous)
    monkeypatch.setattr(A.os, "replace", boom)
    with pytest.raises(OSError, match="I/O error"):
        ember.save({"version": 2}, previous)
    monkeypatch.undo()
    _assert_previous_intact(previous)


def test_keyboard_interrupt_midway_cleans_up(previous, monkeypatch):
    real = A._write_record

    def interrupted(zf, name, payload):
        if "/data/" in name:
            raise KeyboardInterrupt
        return real(zf, name, payload)
    monkeypatch.setattr(A, "_write_record", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ember.save({"version": 2, "w": ember.ones(3)}, previous)
    monkeypatch.undo()
    _assert_previous_intact(previous)


def test_successful_save_replaces_and_keeps_the_mode(previous):
    os.chmod(previous, 0o640)
    ember.save({"version": 2}, previous)
    assert ember.load(previous) == {"version": 2}
    assert os.stat(previous).st_mode & 0o777 == 0o640
    assert _temps(previous.parent) == []


def test_save_through_a_symlink_writes_its_target(tmp_path):
    real = tmp_path / "real.pt"
    link = tmp_path / "link.pt"
    ember.save({"v": 1}, real)
    os.symlink(real, link)
    ember.save({"v": 2}, link)
    assert os.path.islink(link) and ember.load(real) == {"v": 2}


def test_fsync_false_still_replaces_atomically(previous, monkeypatch):
    calls = []
    monkeypatch.setattr(A.os, "fsync", lambda fd: calls.append(fd))
    ember.save({"version": 3}, previous, fsync=False)
    assert calls == [] and ember.load(previous) == {"version": 3}
    ember.save({"version": 4}, previous)
    assert len(calls) == 2   # the file, then its directory


_KILLED_SAVER = textwrap.dedent("""
    import os, sys, time
    import ember
    from ember.serialization import _archive as A
    path = sys.argv[1]

    class Slow:
        # the real file, but slow and announcing when it is halfway through the big storage
        def __init__(self, real):
            self.real, self.n = real, 0
        def write(self, b):
            self.n += memoryview(b).nbytes
            if self.n > 1 << 20:
                print("midway", flush=True)
                time.sleep(60)
            return self.real.write(b)
        def __getattr__(self, name):
            return getattr(self.real, name)

    A._fdopen = lambda fd, mode: Slow(os.fdopen(fd, mode))
    ember.save({"version": 2, "w": ember.zeros(1 << 20)}, path)
""")


def test_killed_save_leaves_the_previous_file_and_the_next_save_cleans_up(previous):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_SAVER, str(previous)], stdout=subprocess.PIPE, env=env)
    try:
        line = proc.stdout.readline()
        assert line == b"midway\n"
        assert len(_temps(previous.parent)) == 1          # the save is under way, beside the target
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    back = ember.load(previous)
    assert back["version"] == 1 and back["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert len(_temps(previous.parent)) == 1              # a kill can't clean up after itself...
    ember.save({"version": 3}, previous)                  # ...so the next save to the path does
    assert _temps(previous.parent) == [] and ember.load(previous) == {"version": 3}


def test_a_live_saver_temp_file_is_not_removed(previous):
    live = previous.parent / f".{previous.name}.{A.socket.gethostname().replace('.', '_')}.1.abcd{A._TMP_SUFFIX}"
    live.write_bytes(b"partial")   # pid 1 is alive: another process's save in progress
    ember.save({"version": 2}, previous)
    assert live.exists()


# -- truncated and corrupt files ---------------------------------------------------------------------
@pytest.fixture
def good_bytes():
    buf = io.BytesIO()
    ember.save({"w": ember.arange(2000.0), "b": ember.ones(3, dtype=ember.int64)}, buf)
    return buf.getvalue()


@pytest.mark.parametrize("keep", [0, 10, 100, 0.5, 0.99, -1])
def test_truncated_files_raise_runtime_error_naming_the_file(tmp_path, good_bytes, keep):
    n = int(len(good_bytes) * keep) if isinstance(keep, float) else (len(good_bytes) + keep if keep < 0 else keep)
    path = tmp_path / "cut.pt"
    path.write_bytes(good_bytes[:n])
    with pytest.raises(RuntimeError, match="cut.pt") as e:
        ember.load(path)
    assert "truncated" in str(e.value) or "empty" in str(e.value)


def test_flipped_byte_in_a_storage_is_detected(tmp_path, good_bytes):
    data = bytearray(good_bytes)
    i = bytes(data).find(np.float32(1234.0).tobytes())
    data[i + 1] ^= 0x40
    path = tmp_path / "flip.pt"
    path.write_bytes(bytes(data))
    with pytest.raises(RuntimeError, match=r"flip\.pt.*storage '0' is corrupt \(CRC-32"):
        ember.load(path)


def test_flipped_byte_in_the_pickle_is_detected(tmp_path, good_bytes):
    data = bytearray(good_bytes)
    zf = zipfile.ZipFile(io.BytesIO(good_bytes))
    info = zf.getinfo("archive/data.pkl")
    data[info.header_offset + 30 + len(info.filename) + len(info.extra) + 5] ^= 0x01
    path = tmp_path / "pkl.pt"
    path.write_bytes(bytes(data))
    with pytest.raises(RuntimeError, match=r"pkl\.pt.*data\.pkl"):
        ember.load(path)


@pytest.mark.parametrize("content, hint", [
    (b"", "empty"), (b"\x80\x02}q\x00.", "pickle"), (b"\x93NUMPY\x01\x00", "numpy"),
    (b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":1}", "safetensors"), (b"hello world", "not a zip"),
])
def test_other_files_get_a_hint(tmp_path, content, hint):
    path = tmp_path / "other.bin"
    path.write_bytes(content)
    with pytest.raises(RuntimeError, match=hint):
        ember.load(path)


def test_zip_that_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "x.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("readme.txt", "hi")
    with pytest.raises(RuntimeError, match="no data.pkl"):
        ember.load(path)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("model/constants.pkl", "")
    with pytest.raises(RuntimeError, match="TorchScript"):
        ember.load(path)
