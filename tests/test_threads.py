"""ember.set_num_threads / get_num_threads reach the cpu backend's BLAS pools; DataLoader workers
use one thread each."""
import os
import subprocess
import sys
import textwrap

import pytest

import ember


def test_set_num_threads_limits_blas_in_a_fresh_process():
    code = textwrap.dedent("""
        import ember
        from threadpoolctl import threadpool_info
        ember.set_num_threads(1)          # before the cpu backend loads: applied when it does
        ember.zeros(1)
        blas = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
        print(ember.get_num_threads(), blas)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")})
    assert r.returncode == 0, r.stderr
    n, blas = r.stdout.split(" ", 1)
    assert n == "1" and set(eval(blas)) <= {1}


def test_bad_thread_counts_are_refused():
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="positive integer"):
            ember.set_num_threads(bad)


class _Probe(ember.utils.data.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return ember.get_num_threads()


def test_dataloader_workers_use_one_thread():
    loader = ember.utils.data.DataLoader(_Probe(), batch_size=None, num_workers=2)
    assert list(loader) == [1, 1]


def test_interop_threads_are_recorded_and_checked():
    before = ember.get_num_interop_threads()
    try:
        ember.set_num_interop_threads(3)
        assert ember.get_num_interop_threads() == 3
        for bad in (0, -1, 2.0, True, "2"):
            with pytest.raises(ValueError, match="set_num_interop_threads"):
                ember.set_num_interop_threads(bad)
        assert ember.get_num_interop_threads() == 3
    finally:
        ember.set_num_interop_threads(before)
