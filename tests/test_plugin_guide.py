"""The guides' examples work. docs/plugins.md is enough to write working plugins: its example
files are written into a fresh folder outside this repository, pip-installed into a new virtual
environment that sees this environment's packages (the core, cpu_numpy, pip, setuptools, pytest)
but not this checkout, and used there: the optimizer as ``ember.optim.Lion``, the op as
``ember.ops.squareplus`` (with its kernel and layer), and the guide's own tests pass. The python
blocks of docs/plugins.md and docs/backends.md run in order in one namespace (the toy backend of
the latter included)."""
import os
import re
import site
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "plugins.md")
TEXT = open(DOC).read()

EXPECTED = {
    "ember-lion/pyproject.toml", "ember-lion/ember_lion/__init__.py", "ember-lion/ember_lion/lion.py",
    "ember-lion/tests/test_lion.py",
    "ember-squareplus/pyproject.toml", "ember-squareplus/ember_squareplus/__init__.py",
    "ember-squareplus/ember_squareplus/op.py", "ember-squareplus/ember_squareplus/cpu_numpy_kernel.py",
    "ember-squareplus/ember_squareplus/layer.py", "ember-squareplus/tests/test_squareplus.py",
}


def guide_files() -> dict:
    """path -> contents of every code block whose first line is ``# ember-<name>/<path>``."""
    files = {}
    for body in re.findall(r"```(?:python|toml)\n(.*?)```", TEXT, re.S):
        m = re.fullmatch(r"# (ember-[\w-]+/[\w./-]+)", body.split("\n", 1)[0])
        if m:
            assert m.group(1) not in files, f"{m.group(1)} is shown twice in docs/plugins.md"
            files[m.group(1)] = body
    return files


def test_the_guide_shows_every_file_of_both_plugins():
    assert set(guide_files()) == EXPECTED


def test_the_python_blocks_run_in_order_in_one_namespace(capsys):
    ns = {"__name__": "__doc_example__"}
    for i, block in enumerate(re.findall(r"```python\n(.*?)```", TEXT, re.S)):
        exec(compile(block, f"docs/plugins.md python block {i + 1}", "exec"), ns)
    out = capsys.readouterr().out
    assert "[0.9, -1.9] [0.02, -0.04]" in out and "SquareplusBackward0" in out


def test_the_backend_guide_python_blocks_run_in_order_in_one_namespace(capsys):
    text = open(os.path.join(ROOT, "docs", "backends.md")).read()
    ns = {"__name__": "__doc_example__"}
    for i, block in enumerate(re.findall(r"```python\n(.*?)```", text, re.S)):
        exec(compile(block, f"docs/backends.md python block {i + 1}", "exec"), ns)
    out = capsys.readouterr().out
    assert "15.0 toy:0" in out and "exp: backend 'toy' (device toy:0) has no kernel for this op" in out
    assert "ember op coverage on backend 'toy' (device type 'toy'): 6 native" in out


def _run(py, args, cwd, timeout=300):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EMBER_DISABLE_PLUGINS", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    r = subprocess.run([str(py), *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, args))} failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout


@pytest.fixture(scope="module")
def guide_env(tmp_path_factory):
    work = tmp_path_factory.mktemp("plugin-guide")
    assert not os.path.realpath(work).startswith(ROOT + os.sep)
    for rel, body in guide_files().items():
        path = work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # this environment's installed packages (editable ones included: addsitedir runs their .pth files)
    dirs = [d for d in site.getsitepackages() + [site.getusersitepackages()] if os.path.isdir(d)]
    with open(os.path.join(purelib, "_ember_test_parent_env.pth"), "w") as f:
        f.write("import site; " + "; ".join(f"site.addsitedir({d!r})" for d in dirs) + "\n")
    _run(py, ["-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
              "./ember-lion", "./ember-squareplus"], cwd=work)
    return work, py


def test_ember_plugins_lists_the_installed_guide_plugins(guide_env):
    work, py = guide_env
    out = _run(py, ["-m", "ember", "plugins"], cwd=work)
    lion = out[out.index("lion: "):]
    assert lion.startswith("lion: ember-lion 0.1.0 [loaded]\n  module: ember_lion\n  hooks: ember_register_optimizers\n"
                           "  optimizers: ember.optim.Lion\n"), out
    sq = out[out.index("squareplus: "):]
    assert sq.startswith("squareplus: ember-squareplus 0.1.0 [loaded]\n  module: ember_squareplus\n"
                         "  hooks: ember_register_kernels, ember_register_modules, ember_register_ops\n"
                         "  ops: squareplus\n  modules: ember.nn.Squareplus\n"), out


def test_the_installed_optimizer_and_op_work(guide_env):
    work, py = guide_env
    out = _run(py, ["-c", textwrap.dedent("""
        import numpy as np
        import ember
        from ember.ops import squareplus            # reachable right after import
        import ember_lion, ember_squareplus
        assert "/work/main" not in ember_lion.__file__ and "plugin-guide" in ember_lion.__file__

        # the optimizer: ember.optim.Lion, a few steps against the update rule by hand
        w0 = np.array([0.5, -1.5, 2.0])
        w = ember.tensor(w0, dtype=ember.float64, requires_grad=True)
        opt = ember.optim.Lion([w], lr=0.1, weight_decay=0.5)
        ref, m = w0.copy(), np.zeros(3)
        for _ in range(3):
            opt.zero_grad()
            (w ** 3).sum().backward()
            opt.step()
            g = 3 * ref ** 2
            ref = ref * (1 - 0.1 * 0.5) - 0.1 * np.sign(0.9 * m + 0.1 * g)
            m = 0.99 * m + 0.01 * g
        np.testing.assert_allclose(w.detach().numpy(), ref, rtol=1e-12)
        print("lion ok", type(opt).__module__)

        # the op: its cpu_numpy kernel runs, it is differentiable twice, the layer works
        x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
        assert squareplus is ember.squareplus is ember.ops.squareplus
        y = ember.squareplus(x)
        assert y.grad_fn.name() == "SquareplusBackward0"
        from ember.testing.helpers import backend_for
        kernel = backend_for(x.device).kernels["squareplus"]
        assert kernel.__module__ == "ember_squareplus.cpu_numpy_kernel"
        xn = x.detach().numpy()
        np.testing.assert_allclose(y.detach().numpy(), (xn + np.sqrt(xn * xn + 4)) / 2, rtol=1e-12)
        assert ember.autograd.gradcheck(ember.squareplus, (x,))
        assert ember.autograd.gradgradcheck(ember.squareplus, (x,))
        layer = ember.nn.Squareplus(b=2.0)
        layer(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), (1 + xn / np.sqrt(xn * xn + 2)) / 2, rtol=1e-12)
        print("squareplus ok", repr(layer))
    """)], cwd=work)
    assert "lion ok ember_lion.lion" in out and "squareplus ok Squareplus(b=2.0)" in out


def test_the_guide_plugins_own_tests_pass(guide_env):
    work, py = guide_env
    out = _run(py, ["-m", "pytest", "-q", "-p", "no:cacheprovider", "ember-lion/tests", "ember-squareplus/tests"],
               cwd=work)
    passed = re.search(r"(\d+) passed", out)
    assert passed and int(passed.group(1)) >= 8 and "failed" not in out and "error" not in out, out


def test_disabling_the_guide_plugin_hides_it(guide_env):
    work, py = guide_env
    env_code = ("import os, subprocess, sys\n"
                "out = subprocess.run([sys.executable, '-c', 'import ember; print(hasattr(ember.optim, \"Lion\"), "
                "hasattr(ember, \"squareplus\"))'], capture_output=True, text=True, "
                "env=dict(os.environ, EMBER_DISABLE_PLUGINS='lion')).stdout\n"
                "print(out)")
    assert _run(py, ["-c", env_code], cwd=work).split() == ["False", "True"]
