"""As installed: `ember plugins` lists ember-rmsnorm with its version, hooks, op and layer and no
error (its opencl kernel registers where opencl is installed), and EMBER_DISABLE_PLUGINS=rmsnorm
hides it while other plugins stay (fresh interpreters)."""
import os
import subprocess
import sys


def _run(args, disable=None):
    env = {k: v for k, v in os.environ.items() if k != "EMBER_DISABLE_PLUGINS"}
    if disable is not None:
        env["EMBER_DISABLE_PLUGINS"] = disable
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _block(out, name):
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(name + ":"))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
    return "\n".join(lines[start:end])


def test_ember_plugins_lists_it_without_errors():
    import ember_rmsnorm
    block = _block(_run(["-m", "ember", "plugins"]), "rmsnorm")  # loads every backend, so every kernel hook runs
    assert block.splitlines()[0] == f"rmsnorm: ember-rmsnorm {ember_rmsnorm.__version__} [loaded]", block
    assert "  hooks: ember_register_kernels, ember_register_modules, ember_register_ops" in block
    assert "  ops: rms_norm" in block and "  modules: ember.nn.FusedRMSNorm" in block
    assert "error" not in block


def test_disabled_it_is_gone_and_the_others_stay():
    out = _run(["-m", "ember", "plugins"], "rmsnorm")
    assert "[blocked by EMBER_DISABLE_PLUGINS]" in _block(out, "rmsnorm")
    assert "[loaded]" in _block(out, "cpu_numpy")
    out = _run(["-c", "import ember\nprint(hasattr(ember, 'rms_norm'), hasattr(ember.nn, 'FusedRMSNorm'), "
                      "float(ember.ones(2).sum()))"], "rmsnorm")
    assert out.split() == ["False", "False", "2.0"]
