"""The layering of the core, read from the top of each file: every module sits in one layer of
:data:`LAYERS` (docs/design.md explains them) and imports only from its own layer or the layers
below, at module level. Imports inside functions remain only for optional third-party packages
and the documented exceptions below (each with its reason).

The test walks the AST of every file under core/; it imports nothing.
"""
from __future__ import annotations

import ast
import fnmatch
import pathlib
import sys

CORE = pathlib.Path(__file__).resolve().parent.parent / "core"

#: lowest first; a module is in the layer of the most specific pattern matching its name
LAYERS = (
    ("base: dtypes, devices, storage, process state",
     ("ember._version", "ember.version", "ember._compat", "ember._dtype", "ember._device", "ember._layout",
      "ember._storage", "ember._state", "ember.hookspecs", "ember.return_types", "ember.ops.primitives",
      "ember._hoststep")),
    ("the tensor, the backend contract, plugin loading",
     ("ember._tensor", "ember.backend", "ember.backend.*", "ember._plugins", "ember._devices", "ember._threads")),
    ("the autograd graph and dispatch", ("ember._graph", "ember.ops.registry")),
    ("op families", ("ember.ops", "ember.ops.*")),
    ("the Tensor API: autograd engine, Tensor methods, printing, DLPack, plugin registries",
     ("ember.autograd", "ember.autograd.*", "ember._methods", "ember._repr", "ember._dlpack", "ember._legacy",
      "ember._registry_hooks", "ember._toplevel", "ember._complex_methods")),
    ("libraries: nn, optim, data, serialization, distributed, device APIs",
     ("ember.nn", "ember.nn.*", "ember.special", "ember.optim", "ember.optim.*", "ember.utils", "ember.utils.*",
      "ember.serialization", "ember.serialization.*", "ember.distributed", "ember.distributed.*", "ember.cuda",
      "ember.cuda.*", "ember.cpu", "ember.cpu.*", "ember.amp", "ember.amp.*", "ember.multiprocessing",
      "ember.multiprocessing.*", "ember.backends", "ember.backends.*", "ember.sparse", "ember.accelerator",
       "ember.accelerator.*", "ember.jit", "ember.hub", "ember.onnx", "ember.onnx.*", "ember.func",
       "ember.func.*", "ember.profiler", "ember.profiler.*", "ember.autograd.profiler", "ember.linalg",
       "ember.fft", "ember.signal", "ember.signal.*", "ember.compiler", "ember.compiler.*", "ember._dynamo",
       "ember._dynamo.*", "ember._inductor", "ember._inductor.*",
       "ember.distributions", "ember.distributions.*")),
    ("the package front, CLI, testing", ("ember", "ember.__main__", "ember.cli", "ember.testing", "ember.testing.*")),
)

#: third-party packages that are optional extras: imported where used, inside functions
OPTIONAL_PACKAGES = {"ml_dtypes", "mpi4py", "threadpoolctl", "scipy", "safetensors", "tqdm", "matplotlib",
                     "tensorboard", "onnx", "onnxruntime", "einops", "numexpr", "mpmath"}

#: modules allowed to import inside functions, and why
FUNCTION_IMPORT_EXCEPTIONS = {
    "ember.testing.pytest_plugin": "pytest loads it in every run where ember is installed; it imports ember only "
                                   "when a test asks for a device",
}


def _module_name(path: pathlib.Path) -> str:
    parts = ["ember", *path.relative_to(CORE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_package(path: pathlib.Path) -> bool:
    return path.name == "__init__.py"


MODULES = {_module_name(p): p for p in sorted(CORE.rglob("*.py"))}


def layer_of(module: str) -> int:
    best, best_len = None, -1
    for i, (_, patterns) in enumerate(LAYERS):
        for pat in patterns:
            if fnmatch.fnmatchcase(module, pat) and len(pat.rstrip("*")) > best_len:
                best, best_len = i, len(pat.rstrip("*"))
    if best is None:
        raise AssertionError(f"{module} is in no layer of tests/test_layering.py: add it to LAYERS")
    return best


def _targets(node, module: str, is_package: bool):
    """The ember modules an import statement reaches (``from pkg import name`` reaches
    ``pkg.name`` when that is a module, else ``pkg``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name == "ember" or a.name.startswith("ember.")]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        pkg = ".".join(base + ([node.module] if node.module else []))
    else:
        pkg = node.module or ""
    if not (pkg == "ember" or pkg.startswith("ember.")):
        return []
    return [f"{pkg}.{a.name}" if f"{pkg}.{a.name}" in MODULES else pkg for a in node.names]


def _function_imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    yield sub


def _toplevel_package(node) -> str:
    if isinstance(node, ast.Import):
        return node.names[0].name.split(".")[0]
    return "" if node.level else (node.module or "").split(".")[0]


def test_every_module_is_in_a_layer():
    for module in MODULES:
        layer_of(module)


def test_imports_point_down_the_layer_table():
    wrong = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        mine = layer_of(module)
        inner = set(map(id, _function_imports(tree)))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in inner:
                continue
            for target in _targets(node, module, _is_package(path)):
                if layer_of(target) > mine:
                    wrong.append(f"{path.relative_to(CORE.parent)}:{node.lineno}: {module} (layer {mine}) imports "
                                 f"{target} (layer {layer_of(target)}: {LAYERS[layer_of(target)][0]})")
    assert not wrong, "imports that point up the layer table:\n" + "\n".join(wrong)


def test_no_imports_inside_functions():
    wrong = []
    for module, path in MODULES.items():
        if module in FUNCTION_IMPORT_EXCEPTIONS:
            continue
        tree = ast.parse(path.read_text())
        for node in _function_imports(tree):
            top = _toplevel_package(node)
            if top in OPTIONAL_PACKAGES:
                continue
            what = ast.unparse(node)
            wrong.append(f"{path.relative_to(CORE.parent)}:{node.lineno}: {what}")
    assert not wrong, ("imports inside function bodies (move them to the top of the module; only optional "
                       "third-party packages and the exceptions listed in tests/test_layering.py stay inside "
                       "functions):\n" + "\n".join(wrong))


def test_the_layer_table_is_not_stale():
    for _, patterns in LAYERS:
        for pat in patterns:
            assert any(fnmatch.fnmatchcase(m, pat) for m in MODULES), f"no module matches {pat!r}"
    assert set(FUNCTION_IMPORT_EXCEPTIONS) <= set(MODULES)
    assert sys.stdlib_module_names.isdisjoint(OPTIONAL_PACKAGES)
