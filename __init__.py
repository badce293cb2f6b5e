"""Not the ember package: the root of a checkout of ember's repository (the package is ``core/``).

Python runs this file only when a script runs next to a checkout folder named ``ember``: the
folder's parent is then on ``sys.path`` (the script's folder, or the working directory for
``python -c`` and the REPL), so ``import ember`` finds the folder. Without this file the folder
would become an empty namespace package, winning over an editable install (whose finder comes
after the path search), and ``ember.zeros`` would fail with "module 'ember' has no attribute
'zeros'". This file finds the package the import would have found without the folder (the other
``sys.path`` entries, then the finders that editable installs add) and puts it in its place; when
there is none, it raises an ImportError that says what happened and what to do.
docs/install.md ("Newcomer traps") describes it, and tests/test_packaging.py checks it.
"""
import importlib.util
import os
import sys
from importlib.machinery import PathFinder

_HERE = os.path.dirname(os.path.abspath(__file__))


def _is_real(spec) -> bool:
    return (spec is not None and spec.loader is not None and spec.origin not in (None, "namespace")
            and os.path.dirname(os.path.abspath(spec.origin)) != _HERE)


def _real_spec(name: str):
    parent = os.path.dirname(_HERE)
    others = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != parent]
    spec = PathFinder.find_spec(name, others)
    if _is_real(spec):
        return spec
    for finder in sys.meta_path:  # editable installs (setuptools' finders), zip importers...
        find = getattr(finder, "find_spec", None)
        if finder is PathFinder or find is None:
            continue
        try:
            spec = find(name, None)
        except Exception:
            continue
        if _is_real(spec):
            return spec
    return None


if __name__ == "ember":
    _spec = _real_spec(__name__)
    if _spec is None:
        raise ImportError(
            f"'import ember' found {_HERE}, a checkout of ember's repository, not the package (which is its "
            f"core/ folder): the script runs next to that folder, so Python looks there first, and no installed "
            f"ember was found elsewhere. Install it from the checkout: pip install -e '{_HERE}' "
            f"-e '{os.path.join(_HERE, 'backends', 'cpu_numpy')}' (or from an index: pip install 'ember[cpu]'); "
            f"or run the script from another folder.", name="ember")
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[__name__] = _module  # the import statement returns what sys.modules holds after this file ran
    _spec.loader.exec_module(_module)
