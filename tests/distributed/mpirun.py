"""Running job scripts under mpiexec from the tests."""
import os
import shutil
import subprocess
import sys
import time

JOBS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs")


def find_mpiexec():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.isfile(here) else shutil.which("mpiexec")


class Result:
    def __init__(self, proc, elapsed):
        self.returncode, self.stdout, self.stderr, self.elapsed = proc.returncode, proc.stdout, proc.stderr, elapsed

    def __repr__(self):
        return f"rc={self.returncode} in {self.elapsed:.1f}s\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def _env(extra):
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")  # two ranks share the machine's cores
    env.update(extra or {})
    return env


def mpiexec(script, *args, n=2, timeout=120, env=None):
    """``mpiexec -n N python jobs/<script> args``."""
    cmd = [find_mpiexec(), "-n", str(n), sys.executable, os.path.join(JOBS, script), *map(str, args)]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(env))
    return Result(proc, time.monotonic() - t0)


def launcher(script, *args, n=2, timeout=120, env=None):
    """``python -m ember.distributed.run --nproc N jobs/<script> args``."""
    cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc", str(n), os.path.join(JOBS, script),
           *map(str, args)]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(env))
    return Result(proc, time.monotonic() - t0)


def python(script, *args, timeout=120, env=None):
    """Plain ``python jobs/<script> args`` (no launcher)."""
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, os.path.join(JOBS, script), *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=_env(env))
    return Result(proc, time.monotonic() - t0)
