"""The compile notice (a line on stderr while a first run compiles kernels) and where the program
cache lives (EMBER_OPENCL_CACHE, XDG_CACHE_HOME, ~/.cache)."""
import io
import os
import subprocess
import sys

from ember_opencl import runtime
from ember_opencl.compile_notice import CompileNotice


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def _notice(**kw):
    out, clock = io.StringIO(), Clock()
    return CompileNotice(stream=out, clock=clock, **kw), out, clock


def test_quick_builds_say_nothing(monkeypatch):
    monkeypatch.delenv("EMBER_OPENCL_QUIET", raising=False)
    n, out, clock = _notice()
    for _ in range(5):
        clock.t += 0.3
        n.built(0.3, "opencl:0 (cpu)", "/c")
    assert out.getvalue() == ""  # 1.5 s of compiling: under the threshold


def test_a_long_burst_says_so_once_per_interval_with_progress(monkeypatch):
    monkeypatch.delenv("EMBER_OPENCL_QUIET", raising=False)
    n, out, clock = _notice()
    for _ in range(40):  # 40 builds of 0.4 s: 16 s of compiling
        clock.t += 0.4
        n.built(0.4, "opencl:0 (pthread-cpu)", "/home/u/.cache/ember/opencl")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines  # at 2.0 s (build 5), then 10 s later (build 30)
    assert lines[0] == ("ember-opencl: compiling OpenCL kernels for opencl:0 (pthread-cpu) on first use: 5 compiled "
                        "so far (2.0 s); the binaries are cached in /home/u/.cache/ember/opencl, so later runs skip "
                        "this (EMBER_OPENCL_QUIET=1 hides this)")
    assert lines[1].startswith("ember-opencl: compiling OpenCL kernels for opencl:0 (pthread-cpu) on first use: 30 "
                               "compiled so far (12.0 s)")


def test_a_pause_starts_a_new_burst(monkeypatch):
    monkeypatch.delenv("EMBER_OPENCL_QUIET", raising=False)
    n, out, clock = _notice()
    for _ in range(4):
        clock.t += 0.4
        n.built(0.4, "opencl:0", None)
    clock.t += 60  # an epoch of cached kernels: the 1.6 s so far are forgotten
    for _ in range(4):
        clock.t += 0.4
        n.built(0.4, "opencl:0", None)
    assert out.getvalue() == ""
    clock.t += 0.4
    n.built(0.4, "opencl:0", None)
    assert "5 compiled so far (2.0 s); the cache is off (EMBER_OPENCL_CACHE=0)" in out.getvalue()


def test_the_environment_silences_it(monkeypatch):
    monkeypatch.setenv("EMBER_OPENCL_QUIET", "1")
    n, out, clock = _notice()
    for _ in range(20):
        clock.t += 1
        n.built(1.0, "opencl:0", None)
    assert out.getvalue() == ""


def _run(code, **env):
    e = dict(os.environ)
    e.pop("EMBER_OPENCL_QUIET", None)
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120)


def test_compiling_kernels_prints_the_notice_on_stderr(tmp_path):
    code = ("from ember_opencl import runtime; runtime.notice.threshold = 0.0\n"
            "import ember; print((ember.arange(4.0, device='opencl:0') * 3).tolist())\n")
    r = _run(code, EMBER_OPENCL_CACHE=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0.0, 3.0, 6.0, 9.0]"  # stdout stays clean
    assert "ember-opencl: compiling OpenCL kernels for opencl:0 (" in r.stderr, r.stderr
    assert f"the binaries are cached in {tmp_path}, so later runs skip this" in r.stderr
    quiet = _run(code, EMBER_OPENCL_CACHE=str(tmp_path / "other"), EMBER_OPENCL_QUIET="1")
    assert quiet.returncode == 0 and "ember-opencl: compiling" not in quiet.stderr


def test_the_cache_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.delenv("EMBER_OPENCL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert runtime.cache_dir() == str(tmp_path / "xdg" / "ember" / "opencl")
    monkeypatch.setenv("XDG_CACHE_HOME", "")  # empty: unset, per the XDG base directory spec
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert runtime.cache_dir() == str(tmp_path / "home" / ".cache" / "ember" / "opencl")
    monkeypatch.setenv("EMBER_OPENCL_CACHE", str(tmp_path / "mine"))  # the explicit setting wins
    assert runtime.cache_dir() == str(tmp_path / "mine")


def test_a_process_under_xdg_cache_home_writes_its_binaries_there(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    code = "import ember; print((ember.ones(3, device='opencl:0') + 1).tolist())\n"
    e = dict(os.environ)
    e.pop("EMBER_OPENCL_CACHE", None)
    e.update(env)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120)
    assert r.returncode == 0, r.stderr
    assert any(p.suffix == ".bin" for p in (tmp_path / "ember" / "opencl").iterdir())
