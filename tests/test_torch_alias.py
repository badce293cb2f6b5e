"""ember.testing.torch_alias: ``import torch`` resolved to ember, in this process (install,
uninstall, the context manager, the refusal where the real torch is loaded) and from the command
line (``python -m ember.testing.torch_alias script.py``), including processes the script spawns."""
import os
import subprocess
import sys
import textwrap
import types

import pytest

import ember
from ember.testing import torch_alias


@pytest.fixture
def no_torch(monkeypatch):
    """This process as if nothing had imported torch yet (the oracle tests may have imported the
    real one); every torch entry of sys.modules comes back afterwards, and the hook goes."""
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        monkeypatch.delitem(sys.modules, name)
    yield
    torch_alias.uninstall()


def _finders():
    return [f for f in sys.meta_path if type(f).__name__ == "_TorchAliasFinder"]


def test_torch_and_its_submodules_are_embers(no_torch):
    with torch_alias.aliased() as alias:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        import torch.optim.lr_scheduler
        from torch.utils.data import DataLoader
        assert alias is ember and torch is ember
        assert nn is ember.nn and F is ember.nn.functional and sys.modules["torch.nn"] is ember.nn
        assert torch.optim.lr_scheduler is ember.optim.lr_scheduler
        assert sys.modules["torch.optim.lr_scheduler"] is ember.optim.lr_scheduler
        assert DataLoader is ember.utils.data.DataLoader
        assert torch.nn.Linear(2, 3)(torch.ones(1, 2)).shape == (1, 3)
    # ember's modules keep their own identity
    assert ember.__spec__.name == "ember" and ember.nn.__spec__.name == "ember.nn"
    assert ember.__name__ == "ember" and ember.nn.__name__ == "ember.nn"


def test_uninstall_forgets_the_aliases(no_torch):
    torch_alias.install()
    torch_alias.install()
    assert len(_finders()) == 1 and torch_alias.is_installed()
    import torch.nn  # noqa: F401
    torch_alias.uninstall()
    assert not _finders() and not torch_alias.is_installed()
    assert not [n for n in sys.modules if n == "torch" or n.startswith("torch.")]
    assert sys.modules["ember.nn"] is ember.nn
    torch_alias.uninstall()  # a no-op


def test_aliased_keeps_an_installed_hook(no_torch):
    torch_alias.install()
    with torch_alias.aliased():
        pass
    assert torch_alias.is_installed()
    torch_alias.uninstall()
    with torch_alias.aliased():
        assert torch_alias.is_installed()
    assert not torch_alias.is_installed()


def test_a_module_ember_lacks_is_named_in_torch_and_ember_terms(no_torch):
    with torch_alias.aliased():
        with pytest.raises(ModuleNotFoundError, match=r"'torch\.no_such_module'.*'ember\.no_such_module'") as e:
            import torch.no_such_module.deeper  # noqa: F401
        assert e.value.name == "torch.no_such_module"
        assert "torch.no_such_module" not in sys.modules and "torch.no_such_module.deeper" not in sys.modules


def test_refuses_where_the_real_torch_is_imported(no_torch, monkeypatch):
    real = types.ModuleType("torch")
    real.__file__ = "/site-packages/torch/__init__.py"
    monkeypatch.setitem(sys.modules, "torch", real)
    before = list(sys.meta_path)
    with pytest.raises(RuntimeError, match="the real PyTorch is already imported.*/site-packages/torch"):
        torch_alias.install()
    with pytest.raises(RuntimeError, match="real PyTorch"):
        with torch_alias.aliased():
            pass
    assert sys.meta_path == before and sys.modules["torch"] is real


# ----------------------------------------------------------------------------------------------
# the command line


def _run(args, cwd, timeout=120):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "ember.testing.torch_alias", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    proc.log = f"rc={proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    return proc


def test_runs_a_script_as_python_would(tmp_path):
    (tmp_path / "helper_mod.py").write_text("VALUE = 42\n")
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import pickle, sys
        import torch
        import torch.nn as nn
        import helper_mod                      # found next to the script

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 1)

        if __name__ == "__main__":
            from ember.testing import torch_alias
            print("installed", torch_alias.is_installed())
            print("argv", sys.argv[1:], torch.__name__, helper_mod.VALUE)
            net = pickle.loads(pickle.dumps(Net()))   # __main__.Net pickles by reference
            print("pickled", type(net).__name__, tuple(net.fc.weight.shape))
            raise SystemExit(int(sys.argv[2]))
    """))
    proc = _run([script, "--flag", 3], cwd=tmp_path.parent)
    assert proc.returncode == 3, proc.log
    assert "installed True" in proc.stdout and "argv ['--flag', '3'] ember 42" in proc.stdout, proc.log
    assert "pickled Net (1, 2)" in proc.stdout, proc.log


def test_runs_a_module_with_dash_m(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "helper.py").write_text("VALUE = 7\n")
    (tmp_path / "pkg" / "train.py").write_text(textwrap.dedent("""
        import multiprocessing, sys
        import torch
        from . import helper                   # relative imports work: the module runs in its package

        def work(q):
            q.put((torch.__name__, helper.VALUE))

        if __name__ == "__main__":
            print("module", torch.__name__, sys.argv[1:], helper.VALUE)
            ctx = multiprocessing.get_context("spawn")
            q = ctx.Queue()
            p = ctx.Process(target=work, args=(q,))
            p.start()
            print("child", q.get(timeout=60))
            p.join()
    """))
    proc = _run(["-m", "pkg.train", "x"], cwd=tmp_path)
    assert proc.returncode == 0 and "module ember ['x'] 7" in proc.stdout, proc.log
    assert "child ('ember', 7)" in proc.stdout, proc.log
    missing = _run(["-m", "pkg.nonexistent"], cwd=tmp_path)
    assert missing.returncode == 1 and "No module named 'pkg.nonexistent'" in missing.stderr, missing.log


def test_usage(tmp_path):
    proc = _run([], cwd=tmp_path)
    assert proc.returncode == 2 and "usage: python -m ember.testing.torch_alias" in proc.stderr, proc.log


def test_spawned_processes_import_the_script_with_the_alias(tmp_path):
    """A child started with spawn imports the script again as __mp_main__: the hook is installed
    there too, and the script's functions are the child's __main__."""
    script = tmp_path / "spawner.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing
        import torch

        def work(q, n):
            q.put((torch.__name__, __name__, torch.arange(n).sum().item()))

        if __name__ == "__main__":
            ctx = multiprocessing.get_context("spawn")
            q = ctx.Queue()
            p = ctx.Process(target=work, args=(q, 5))
            p.start()
            print("child", q.get(timeout=60))
            p.join()
            print("exitcode", p.exitcode)
    """))
    proc = _run([script], cwd=tmp_path)
    assert proc.returncode == 0, proc.log
    assert "child ('ember', '__mp_main__', 10)" in proc.stdout and "exitcode 0" in proc.stdout, proc.log
