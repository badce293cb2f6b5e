"""``import torch`` resolved to ember: run code written for PyTorch, unmodified, on ember.

:func:`install` puts an import hook first on ``sys.meta_path`` that answers ``torch`` and every
``torch.*`` module with ember's module of the same path, so that after it::

    import torch                                   # ember
    import torch.nn as nn                          # ember.nn
    from torch.utils.data import DataLoader        # ember.utils.data.DataLoader
    import sys, ember
    assert sys.modules["torch.nn"] is ember.nn

A ``torch.X`` that ember does not have raises ``ModuleNotFoundError`` naming both modules. The
hook is for running programs written for PyTorch on ember (tests, a corpus of scripts, a
user's own training code); it is not a way to reach the real PyTorch, and it refuses to install
where the real ``torch`` is already imported. :func:`uninstall` removes it and forgets the
aliases; :func:`aliased` is the same pair as a context manager (for a test). From the command
line, ``python -m ember.testing.torch_alias script.py [args...]`` (or ``-m module [args...]``)
runs a script with the hook installed, as ``python script.py`` would; processes the script
starts with the ``spawn`` or ``forkserver`` method import the script again with the hook
installed too.
"""
from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import types

__all__ = ["install", "uninstall", "is_installed", "aliased", "run_path", "run_module", "main"]

_THIS = "ember.testing.torch_alias"  # this module's name, also when it runs as __main__


def _target(fullname: str) -> str:
    return "ember" + fullname[len("torch"):]


class _AliasLoader(importlib.abc.Loader):
    """Hands the import system ember's already-imported module (nothing to execute)."""

    def __init__(self, module: types.ModuleType):
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        # the import system stamped the alias's spec on ember's module: give it its own back
        module.__spec__ = self.spec


class _TorchAliasFinder(importlib.abc.MetaPathFinder):
    """``torch`` and ``torch.*`` -> ``ember`` and ``ember.*`` (every such name: none falls through
    to the other finders, which would load a second copy of an ember module under a torch name)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        name = _target(fullname)
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name is None or not (name == e.name or name.startswith(e.name + ".")):
                raise  # a module that ember's module itself imports is missing: not ours to rename
            missing = "torch" + e.name[len("ember"):]
            raise ModuleNotFoundError(
                f"No module named {missing!r} (the torch alias of ember.testing.torch_alias maps it to "
                f"{e.name!r}, which ember does not have)", name=missing) from None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module),
                                               is_package=hasattr(module, "__path__"))

    def __repr__(self):
        return "<ember.testing.torch_alias finder: torch -> ember>"


def _finder():
    return next((f for f in sys.meta_path if type(f).__name__ == "_TorchAliasFinder"
                 and type(f).__module__ == _THIS), None)


def is_installed() -> bool:
    """Whether the hook is on ``sys.meta_path``."""
    return _finder() is not None


def _real_torch_loaded() -> types.ModuleType | None:
    mod = sys.modules.get("torch")
    if mod is None or getattr(mod, "__name__", "") == "ember":
        return None
    return mod


def install() -> None:
    """Makes ``import torch`` (and ``torch.*``) import ember. Installing twice is a no-op.

    Raises ``RuntimeError`` where the real PyTorch is already imported: its modules are in
    ``sys.modules`` and code holding them would mix two libraries."""
    real = _real_torch_loaded()
    if real is not None:
        raise RuntimeError(
            f"ember.testing.torch_alias cannot alias 'torch' to ember: the real PyTorch is already imported "
            f"(from {getattr(real, '__file__', None)!r}). Install the alias before anything imports torch, or run "
            f"the program in a fresh process: python -m ember.testing.torch_alias script.py")
    if not is_installed():
        sys.meta_path.insert(0, _TorchAliasFinder())


def uninstall() -> None:
    """Removes the hook and forgets every ``torch`` / ``torch.*`` alias in ``sys.modules`` (the
    ember modules stay imported as ``ember.*``). Uninstalling where it is not installed is a no-op."""
    while (f := _finder()) is not None:
        sys.meta_path.remove(f)
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        if getattr(sys.modules[name], "__name__", "").split(".")[0] == "ember":
            del sys.modules[name]


@contextlib.contextmanager
def aliased():
    """``with aliased(): import torch`` -- the hook for the block; yields ``ember``. Where the hook
    was installed already it stays installed afterwards."""
    was = is_installed()
    install()
    try:
        yield importlib.import_module("ember")
    finally:
        if not was:
            uninstall()


_MAIN_ENV = "EMBER_TORCH_ALIAS_MAIN"  # the running program, for the processes it spawns: [path, package]


def _main_module(name: str, path: str, package: str | None) -> types.ModuleType:
    main = types.ModuleType(name)
    main.__file__ = path
    main.__package__ = package
    main.__builtins__ = builtins
    # a spawned or forkserver child imports __main__ again by this spec's name: it names this
    # module, whose __mp_main__ branch below installs the hook and runs the program in the child
    main.__spec__ = importlib.machinery.ModuleSpec(_THIS, None)
    return main


def _compile(path: str):
    with open(path, "rb") as f:
        return compile(f.read(), path, "exec")


def _run_main(path: str, package: str | None, argv0: str, argv: list, sys_path0: str) -> dict:
    install()
    code = _compile(path)
    main = _main_module("__main__", path, package)
    saved = sys.modules.get("__main__"), list(sys.argv), list(sys.path), os.environ.get(_MAIN_ENV)
    sys.argv[:] = [argv0, *argv]
    sys.path[0:1] = [sys_path0]
    sys.modules["__main__"] = main
    os.environ[_MAIN_ENV] = json.dumps([path, package])
    try:
        exec(code, main.__dict__)
    finally:
        sys.modules["__main__"], sys.argv[:], sys.path[:] = saved[0], saved[1], saved[2]
        if saved[3] is None:
            os.environ.pop(_MAIN_ENV, None)
        else:
            os.environ[_MAIN_ENV] = saved[3]
    return main.__dict__


def run_path(path: str, argv: list | None = None) -> dict:
    """Runs the script at ``path`` as ``__main__`` with the hook installed, ``sys.argv`` set to
    ``[path, *argv]`` and the script's folder first on ``sys.path``, as ``python path argv...``
    would; returns its globals."""
    path = os.path.abspath(path)
    return _run_main(path, None, path, list(argv or []), os.path.dirname(path))


def run_module(name: str, argv: list | None = None) -> dict:
    """Runs module ``name`` (a package: its ``__main__``) as ``__main__`` with the hook installed,
    as ``python -m name argv...`` would; returns its globals."""
    install()
    spec = importlib.util.find_spec(name)
    if spec is not None and spec.submodule_search_locations is not None:
        spec = importlib.util.find_spec(name + ".__main__")
    if spec is None or not spec.has_location or not str(spec.origin).endswith(".py"):
        raise ImportError(f"No module named {name!r} (a Python source module) to run", name=name)
    return _run_main(spec.origin, spec.parent, spec.origin, list(argv or []), os.getcwd())


_USAGE = "usage: python -m ember.testing.torch_alias (script.py | -m module) [args ...]"


def main(args: list | None = None) -> None:
    """The command line: ``script.py [args...]`` or ``-m module [args...]``."""
    args = list(sys.argv[1:] if args is None else args)
    if not args or args[0] in ("-h", "--help"):
        print(_USAGE, file=sys.stderr if not args else sys.stdout)
        raise SystemExit(2 if not args else 0)
    if args[0] == "-m":
        if len(args) < 2:
            print(_USAGE, file=sys.stderr)
            raise SystemExit(2)
        run_module(args[1], args[2:])
    else:
        run_path(args[0], args[1:])


def _spawned_child(namespace: dict) -> None:
    """In a process started by ``spawn`` or ``forkserver`` from a program this module runs: the
    program again, as ``__mp_main__`` (its ``if __name__ == "__main__"`` block does not run),
    with the hook installed, its names becoming the child's ``__main__``."""
    importlib.import_module(_THIS).install()  # the importable copy of this module, not this __mp_main__ one
    program = os.environ.get(_MAIN_ENV)
    if program is None:
        return
    path, package = json.loads(program)
    child = _main_module("__mp_main__", path, package)
    saved = sys.modules.get("__mp_main__")
    sys.modules["__mp_main__"] = child
    try:
        exec(_compile(path), child.__dict__)
    finally:
        sys.modules["__mp_main__"] = saved
    namespace.update({k: v for k, v in child.__dict__.items() if k not in ("__name__", "__spec__", "__loader__")})


if __name__ == "__main__":
    # the importable copy does the work, so that the program's own `from ember.testing import
    # torch_alias` finds the hook installed (and can uninstall it)
    importlib.import_module(_THIS).main()
elif __name__ == "__mp_main__":
    _spawned_child(globals())
