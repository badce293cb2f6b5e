"""As installed: `ember plugins` lists ember-lookahead with its version, hook and optimizer, and
EMBER_DISABLE_PLUGINS=lookahead hides it (fresh interpreters)."""
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


def test_ember_plugins_lists_it():
    import ember_lookahead
    block = _block(_run(["-m", "ember", "plugins"]), "lookahead")
    assert block.splitlines()[0] == f"lookahead: ember-lookahead {ember_lookahead.__version__} [loaded]"
    assert "  hooks: ember_register_optimizers" in block
    assert "  optimizers: ember.optim.Lookahead" in block


def test_disabled_it_is_listed_as_blocked_and_its_name_is_gone():
    assert "[blocked by EMBER_DISABLE_PLUGINS]" in _block(_run(["-m", "ember", "plugins"], "lookahead"), "lookahead")
    out = _run(["-c", "import ember\ntry:\n    ember.optim.Lookahead\nexcept AttributeError as e:\n    print(e)\n"
                      "print(ember.optim.SGD.__name__)"], "lookahead")
    assert "has no attribute 'Lookahead'" in out and "SGD" in out
