"""Backends and plugins use ember's public API only: no import in backends/ or plugins/ (their
packages and their tests) reaches a name with a leading underscore (``ember._tensor``,
``from ember.ops import _args``, ``from ember.backend import _x``), and ``ember.backend``
offers what they need (docs/design.md, "The backend contract")."""
from __future__ import annotations

import ast
import pathlib

import ember
import ember.backend

ROOT = pathlib.Path(__file__).resolve().parent.parent
TREES = [ROOT / "backends", ROOT / "plugins"]


def _private(parts) -> bool:
    return any(p.startswith("_") and not (p.startswith("__") and p.endswith("__")) for p in parts)


def _private_imports(path: pathlib.Path) -> list:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "ember" and _private(a.name.split(".")):
                    found.append(a.name)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts[0] != "ember":
                continue
            if _private(parts):
                found.append(node.module)
            found.extend(f"{node.module}.{a.name}" for a in node.names if _private([a.name]))
        elif isinstance(node, ast.Attribute) and _private([node.attr]):
            # ember._plugins.x, ember.ops._args: private attributes reached through the ember package
            chain = []
            n = node
            while isinstance(n, ast.Attribute):
                chain.append(n.attr)
                n = n.value
            if isinstance(n, ast.Name) and n.id == "ember":
                found.append(".".join(["ember", *reversed(chain)]))
    return found


def test_backends_and_plugins_import_public_names_only():
    wrong = []
    for tree in TREES:
        for path in sorted(tree.rglob("*.py")):
            if ".egg-info" in str(path) or "fakecupy" in path.parts:
                continue
            for name in _private_imports(path):
                wrong.append(f"{path.relative_to(ROOT)}: {name}")
    assert not wrong, "private ember names used by backends or plugins (use ember.backend and the public " \
                      "modules):\n" + "\n".join(sorted(set(wrong)))


def test_the_backend_api_is_what_its_all_says():
    for name in ember.backend.__all__:
        assert hasattr(ember.backend, name), name
    for mod in (ember.backend.shapes, ember.backend.dtypes):
        for name in mod.__all__:
            assert hasattr(mod, name), f"{mod.__name__}.{name}"


def test_optional_capabilities_have_defaults():
    class Bare(ember.backend.Backend):
        pass

    be = Bare()
    be.name = "bare"
    assert not be.supports_pinning and be.cuda_api is None and not be.is_pinned(None)
    assert be.get_num_threads() is None and be.set_num_threads(2) is None
    assert be.to_dlpack(None) is None and be.dlpack_device(None) is None and be.from_dlpack(None, 0, 0) is None
    assert be.memory_stats(None) == {} and be.empty_cache() is None


def test_backend_generator_seeding_protocol():
    class Counter(ember.backend.BackendGenerator):
        def reset(self, seed):
            self.stream = seed

    g = Counter()
    assert g.initial_seed() == ember.backend.DEFAULT_SEED == g.stream
    g.manual_seed(-1)  # seeds are 64-bit unsigned, as PyTorch's
    assert g.initial_seed() == 2 ** 64 - 1 == g.stream
    s = g.seed()
    assert 0 <= s < 2 ** 63 and g.initial_seed() == s
