"""The examples run: each in its --smoke mode in a subprocess, as a user would start it, asserting
that training lowered the loss; train_digits.py resumes exactly from its checkpoint, degrades
gracefully without tqdm and matplotlib, and refuses a missing device clearly.

Where an optional package is missing (a fresh ``pip install -e . -e backends/cpu_numpy``, the
cpu_numpy tox env) the tests check the example's refusal or fallback; where it is installed
(``tox -e examples``, which sets ``EMBER_REQUIRE_EXTRAS=1`` so that none can be missing) they
check the feature: the tqdm bar, the PNG, training on opencl, two MPI ranks."""
import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
HAS = {m: importlib.util.find_spec(m) is not None for m in ("tqdm", "matplotlib", "mpi4py", "ember_opencl")}


def test_extras_are_installed_where_required():
    if os.environ.get("EMBER_REQUIRE_EXTRAS") == "1":
        missing = [m for m, ok in HAS.items() if not ok] + ([] if _mpiexec() else ["mpiexec"])
        assert not missing, f"EMBER_REQUIRE_EXTRAS=1 but not installed: {missing}"


def run(script, *args, cwd, timeout=180, env=None, python=(sys.executable,)):
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    proc = subprocess.run([*python, os.path.join(EXAMPLES, script), *map(str, args)], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
    proc.log = f"rc={proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    return proc


def blocking(tmp_path, *modules):
    """An environment in which ``import <module>`` fails as if the module were not installed."""
    shadow = tmp_path / "shadow"
    for m in modules:
        (shadow / m).mkdir(parents=True)
        (shadow / m / "__init__.py").write_text(f"raise ImportError('{m} is blocked by the test')\n")
    return {"PYTHONPATH": os.pathsep.join([str(shadow), os.environ.get("PYTHONPATH", "")])}


def history(path):
    import ember
    return ember.load(path)


# ----------------------------------------------------------------------------------------------
# train_digits.py


@pytest.fixture(scope="module")
def digits_two_epochs(tmp_path_factory):
    """One uninterrupted smoke run of two epochs (the reference for the resume test)."""
    d = tmp_path_factory.mktemp("digits")
    proc = run("train_digits.py", "--smoke", "--epochs", 2, "--checkpoint", d / "full.pt", cwd=d)
    return d, proc


def test_train_digits_smoke_lowers_the_loss(digits_two_epochs):
    d, proc = digits_two_epochs
    assert proc.returncode == 0, proc.log
    assert "smoke test passed: test loss fell" in proc.stdout, proc.log
    assert "epoch  1/2" in proc.stdout and "epoch  2/2" in proc.stdout, proc.log
    ck = history(d / "full.pt")
    assert ck["epoch"] == 2 and [h["epoch"] for h in ck["history"]] == [0, 1, 2]
    assert ck["history"][-1]["test_loss"] < ck["history"][0]["test_loss"]
    assert set(ck) >= {"model", "optimizer", "scheduler", "rng_state"}


def test_train_digits_keeps_a_log_file_clean(digits_two_epochs):
    # stderr is a pipe here, as when a run's output goes to a log file: no bar, no carriage returns
    _, proc = digits_two_epochs
    assert "batch/s" not in proc.stderr and "\r" not in proc.stderr, proc.log


@pytest.mark.skipif(not HAS["tqdm"], reason="the progress bar needs tqdm (pip install tqdm; tox -e examples)")
def test_train_digits_progress_bar_when_asked_for(tmp_path):
    proc = run("train_digits.py", "--smoke", "--workers", 0, "--progress", "always", "--checkpoint",
               tmp_path / "ck.pt", cwd=tmp_path)
    assert proc.returncode == 0, proc.log
    assert "batch/s" in proc.stderr, proc.log
    # not a terminal: refreshed at most every 10 s, so a short epoch writes its bar a few times, not dozens
    assert proc.stderr.count("\r") <= 6, proc.log


@pytest.mark.skipif(not HAS["tqdm"], reason="the progress bar needs tqdm (pip install tqdm; tox -e examples)")
def test_train_digits_progress_bar_on_a_terminal(tmp_path):
    import fcntl
    import pty
    import struct
    import termios
    main, sub = pty.openpty()
    fcntl.ioctl(sub, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a 100-column terminal
    code = ("import runpy, sys; sys.argv = ['train_digits.py', '--smoke', '--workers', '0', '--checkpoint', "
            f"{str(tmp_path / 'ck.pt')!r}]; runpy.run_path({os.path.join(EXAMPLES, 'train_digits.py')!r}, "
            "run_name='__main__')")
    chunks = []

    def drain():  # read the terminal while the run writes to it (a full pty buffer would block the run)
        while True:
            try:
                data = os.read(main, 65536)
            except OSError:  # EIO: the run ended and closed its side
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=sub, cwd=tmp_path,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"), text=True)
    os.close(sub)
    out, _ = proc.communicate(timeout=180)
    reader.join(timeout=10)
    os.close(main)
    assert proc.returncode == 0, out
    assert b"batch/s" in b"".join(chunks)  # the bar, on the terminal


def test_train_digits_resume_continues_exactly(digits_two_epochs, tmp_path):
    import ember
    ref_dir, _ = digits_two_epochs
    ck = tmp_path / "ck.pt"
    first = run("train_digits.py", "--smoke", "--epochs", 1, "--checkpoint", ck, cwd=tmp_path)
    assert first.returncode == 0, first.log
    assert history(ck)["epoch"] == 1
    resumed = run("train_digits.py", "--smoke", "--epochs", 2, "--resume", "--checkpoint", ck, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.log
    assert f"resumed from {ck} after epoch 1" in resumed.stdout, resumed.log
    assert "epoch  1/2" not in resumed.stdout and "epoch  2/2" in resumed.stdout, resumed.log
    a, b = history(ref_dir / "full.pt"), history(ck)
    assert b["epoch"] == 2 and [h["epoch"] for h in b["history"]] == [0, 1, 2]
    # the same weights, bit for bit, as the run that was never interrupted
    assert a["model"].keys() == b["model"].keys()
    for k in a["model"]:
        assert ember.equal(a["model"][k], b["model"][k]), k
    assert a["history"][-1]["test_loss"] == b["history"][-1]["test_loss"]
    # a finished checkpoint: nothing left to do, said so
    again = run("train_digits.py", "--smoke", "--epochs", 2, "--resume", "--checkpoint", ck, cwd=tmp_path)
    assert again.returncode == 0 and "nothing to do" in again.stdout, again.log


def test_train_digits_resume_without_a_checkpoint_says_so(tmp_path):
    proc = run("train_digits.py", "--smoke", "--resume", "--checkpoint", tmp_path / "none.pt", cwd=tmp_path)
    assert proc.returncode != 0 and "no checkpoint at" in proc.stderr, proc.log


def test_train_digits_without_tqdm_and_matplotlib(tmp_path):
    """What a fresh `pip install -e . -e backends/cpu_numpy` has: a plain line per epoch, and --plot
    refused at once with the install command."""
    env = blocking(tmp_path, "tqdm", "matplotlib")
    proc = run("train_digits.py", "--smoke", "--workers", 0, "--checkpoint", tmp_path / "c.pt", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.log
    assert "epoch  1/1  train loss" in proc.stdout and "batch/s" not in proc.stderr, proc.log
    plot = run("train_digits.py", "--smoke", "--plot", "--checkpoint", tmp_path / "c.pt", cwd=tmp_path, env=env)
    assert plot.returncode == 2 and "pip install matplotlib" in plot.stderr, plot.log
    assert "epoch" not in plot.stdout, "it should refuse before training"


def test_train_digits_plot(tmp_path):
    png = tmp_path / "curve.png"
    proc = run("train_digits.py", "--smoke", "--workers", 0, "--checkpoint", tmp_path / "c.pt", "--plot", png,
               cwd=tmp_path)
    if HAS["matplotlib"]:
        assert proc.returncode == 0, proc.log
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    else:
        assert proc.returncode == 2 and "pip install matplotlib" in proc.stderr, proc.log


def test_train_digits_opencl(tmp_path):
    """--device opencl trains on the OpenCL backend where it is installed and otherwise says how to
    install it."""
    proc = run("train_digits.py", "--smoke", "--workers", 0, "--no-progress", "--device", "opencl",
               "--checkpoint", tmp_path / "c.pt", cwd=tmp_path)
    if HAS["ember_opencl"]:
        assert proc.returncode == 0 and "on opencl" in proc.stdout, proc.log
        assert "smoke test passed" in proc.stdout, proc.log
    else:
        assert proc.returncode == 1, proc.log
        assert "cannot use device 'opencl'" in proc.stderr and "pip install -e backends/opencl" in proc.stderr, proc.log


def test_train_digits_unknown_device(tmp_path):
    proc = run("train_digits.py", "--smoke", "--device", "nosuchdevice", cwd=tmp_path)
    assert proc.returncode == 1 and "cannot use device 'nosuchdevice'" in proc.stderr, proc.log


def test_train_digits_works_from_another_directory_and_as_torch(tmp_path):
    """The data are found next to the script, whatever the working directory; the script's model
    is importable (ddp_train.py reuses it), and its pieces are ordinary PyTorch code."""
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {EXAMPLES!r})
        import train_digits as td
        images, labels = td.load_digits()
        assert images.shape == (1797, 1, 8, 8) and labels.shape == (1797,)
        assert images.min() == 0.0 and images.max() == 1.0 and sorted(set(labels.tolist())) == list(range(10))
        train, test = td.split(len(labels))
        assert len(set(train.tolist()) & set(test.tolist())) == 0 and len(train) + len(test) == 1797
        import ember as torch
        ds = td.Digits(images[:4], labels[:4], augment=True)
        x, y = ds[0]
        assert tuple(x.shape) == (1, 8, 8) and y.dtype == torch.int64
        out = td.DigitNet()(torch.stack([ds[i][0] for i in range(4)]))
        assert tuple(out.shape) == (4, 10)
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


# ----------------------------------------------------------------------------------------------
# the other examples


def test_char_rnn_smoke(tmp_path):
    proc = run("char_rnn.py", "--smoke", cwd=tmp_path)
    assert proc.returncode == 0, proc.log
    assert "smoke test passed: held-out loss fell" in proc.stdout, proc.log
    sample = proc.stdout.split("--- sample (temperature 0.7) ---\n")[1].split("\n---")[0]
    assert sample.startswith("MENENIUS:\n") and len(sample) == len("MENENIUS:\n") + 100, proc.log


def test_char_rnn_refuses_a_prime_outside_the_vocabulary(tmp_path):
    proc = run("char_rnn.py", "--smoke", "--steps", 1, "--prime", "\u00e9t\u00e9", cwd=tmp_path)
    assert proc.returncode != 0 and "characters not in the training text" in proc.stderr, proc.log


def test_custom_function(tmp_path):
    proc = run("custom_function.py", "--smoke", cwd=tmp_path)
    assert proc.returncode == 0, proc.log
    assert "gradcheck and gradgradcheck passed" in proc.stdout, proc.log
    assert "gradcheck rejects a backward whose bias gradient is doubled" in proc.stdout, proc.log
    assert "smoke test passed: loss fell" in proc.stdout, proc.log


def test_custom_module(tmp_path):
    proc = run("custom_module.py", "--smoke", cwd=tmp_path)
    assert proc.returncode == 0, proc.log
    for line in ("ResidualBlock(\n      width=32, expansion=2",
                 "buffers:    ['input_mean', 'input_std', 'class_weights']",
                 "pre-hook: SpiralNet expects (batch, 2) points, got (4, 3)",
                 "load_state_dict: <All keys matched successfully>", "state-dict round trip: identical outputs",
                 "smoke test passed: loss fell"):
        assert line in proc.stdout, proc.log


def _mpiexec():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.isfile(here) else shutil.which("mpiexec")


def test_ddp_train(tmp_path):
    """Two processes under mpiexec where MPI is installed; otherwise the clear refusal."""
    ck = tmp_path / "ddp.pt"
    if HAS["mpi4py"] and _mpiexec():
        proc = run("ddp_train.py", "--smoke", "--checkpoint", ck, cwd=tmp_path, env={"OMP_NUM_THREADS": "1"},
                   python=(_mpiexec(), "-n", "2", sys.executable))
        assert proc.returncode == 0, proc.log
        assert "2 processes: 160 training images each" in proc.stdout, proc.log
        assert "replicas identical: True" in proc.stdout and "smoke test passed" in proc.stdout, proc.log
        assert proc.stdout.count("smoke test passed") == 1, "only rank 0 reports"
        assert history(ck)["epoch"] == 1
    else:
        proc = run("ddp_train.py", "--smoke", "--checkpoint", ck, cwd=tmp_path)
        assert proc.returncode == 1 and "cannot start ember.distributed" in proc.stderr, proc.log
        assert "mpi4py" in proc.stderr, proc.log
