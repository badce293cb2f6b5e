"""The cpu_numpy backend itself: its generator (the core's seeding protocol, a byte-exact state
format), and what it changes in the process: malloc tuning when the backend is first used (never
on import; EMBER_CPU_MALLOC_TUNING=0 opts out) and a warnings filter scoped to its own modules."""
import hashlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.backend
from ember_cpu_numpy.backend import NumpyGenerator


def _run(code, prefix="", **env):
    e = {k: v for k, v in os.environ.items() if k != "EMBER_CPU_MALLOC_TUNING"}
    e.update(env)
    r = subprocess.run([sys.executable, "-c", prefix + textwrap.dedent(code)], capture_output=True, text=True, env=e,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.split()


# -- the generator ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed,digest", [(0, "8edb7e50b4a972e435d47c3b054c9452"),
                                         (67280421310721, "1bd19d1a96db4e4a6ab58e93d872dd0b"),
                                         (2 ** 64 - 1, "250b93b5c5228428898549a9fb379b1c")])
def test_generator_state_is_byte_for_byte_the_45_byte_format(seed, digest):
    g = NumpyGenerator(seed)
    g.rng.random(3)
    g.rng.integers(0, 10, 1, dtype=np.uint32)  # leaves a cached 32-bit half
    st = g.get_state()
    assert st.dtype == np.uint8 and len(st) == 45
    assert hashlib.sha256(st.tobytes()).hexdigest()[:32] == digest  # the format of earlier releases
    h = NumpyGenerator(1)
    h.set_state(st)
    assert h.initial_seed() == seed and h.rng.random(4).tolist() == g.rng.random(4).tolist()
    with pytest.raises(RuntimeError, match="45 bytes"):
        h.set_state(np.zeros(16, np.uint8))


def test_generator_follows_the_core_seeding_protocol():
    g = NumpyGenerator()
    assert isinstance(g, ember.backend.BackendGenerator) and g.initial_seed() == ember.backend.DEFAULT_SEED
    g.manual_seed(-1)
    assert g.initial_seed() == 2 ** 64 - 1
    a = g.rng.random(3).tolist()
    g.manual_seed(2 ** 64 - 1)
    assert g.rng.random(3).tolist() == a
    s = g.seed()
    assert 0 <= s < 2 ** 63 and g.initial_seed() == s
    assert isinstance(_be_generator(), NumpyGenerator)


def _be_generator():
    return ember.backend.backend_for("cpu").create_generator(ember.device("cpu"))


# -- process-wide settings ---------------------------------------------------------------------------------

_SPY = """
import ctypes
calls = []
class _Libc:
    def __init__(self, name):
        self.name = name
    def mallopt(self, param, value):
        calls.append((param, value))
        return 1
ctypes.CDLL = _Libc
"""


def test_malloc_is_tuned_when_the_backend_is_first_used_not_on_import():
    out = _run("""
        import ember_cpu_numpy.backend as B, ember_cpu_numpy.kernels
        print(len(calls), B.MALLOC_TUNED)
        import ember
        ember.zeros(1)  # the first use of cpu creates the backend
        print(calls == [(-3, 256 << 20), (-1, 1 << 30)], B.MALLOC_TUNED)
        B.NumpyBackend()
        print(len(calls))
    """, _SPY)
    assert out == ["0", "None", "True", "True", "2"]


def test_malloc_tuning_opt_out():
    out = _run("""
        import ember, ember_cpu_numpy.backend as B
        ember.zeros(1)
        print(len(calls), B.MALLOC_TUNED)
    """, _SPY, EMBER_CPU_MALLOC_TUNING="0")
    assert out == ["0", "False"]


def test_the_warnings_filter_covers_the_backends_own_modules_only():
    out = _run("""
        import warnings
        import numpy as np
        import ember
        before = list(warnings.filters)
        x = ember.tensor([0.0, 1.0])
        ember.zeros(1)
        added = [f for f in warnings.filters if f not in before and f[2] is not ImportWarning
                 and f[2].__module__.split(".")[0] not in ("scipy", "numpy")]  # what importing scipy adds
        print(len(added), added[0][0], added[0][2].__name__, added[0][3].pattern)
        with warnings.catch_warnings(record=True) as w:
            r = (x.log(), x / 0.0, (x - 1).sqrt())  # inf and nan, computed silently as in PyTorch
            print(len(w))
        with warnings.catch_warnings(record=True) as w:
            np.log(np.zeros(1))  # the user's own numpy code still warns
            print(len(w), w[0].category.__name__ if w else None)
    """)
    assert out == ["1", "ignore", "RuntimeWarning", "ember_cpu_numpy\\.", "0", "1", "RuntimeWarning"]
