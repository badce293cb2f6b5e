"""Packaging: the core's package list in pyproject.toml matches core/, and the distribution
layout follows docs/design.md (backends and plugins are separate distributions; plugins use ember's
public API only)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _listed():
    text = open(os.path.join(ROOT, "pyproject.toml")).read()
    block = re.search(r"packages = \[(.*?)\]", text, re.S).group(1)
    return set(re.findall(r'"([^"]+)"', block))


def test_every_core_package_is_listed():
    found = set()
    core = os.path.join(ROOT, "core")
    for dirpath, dirnames, filenames in os.walk(core):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        if "__init__.py" in filenames:
            rel = os.path.relpath(dirpath, core)
            found.add("ember" if rel == "." else "ember." + rel.replace(os.sep, "."))
    assert found == _listed(), f"pyproject.toml lists {sorted(_listed())}, core/ has {sorted(found)}"


def test_backends_are_separate_distributions():
    for name, dist in (("cpu_numpy", "ember-cpu-numpy"), ("opencl", "ember-opencl"), ("cuda_cupy", "ember-cuda-cupy")):
        text = open(os.path.join(ROOT, "backends", name, "pyproject.toml")).read()
        assert f'name = "{dist}"' in text
        assert "[project.entry-points.ember]" in text


def test_plugins_are_separate_distributions_on_the_public_api():
    for name in ("lookahead", "rmsnorm"):
        folder = os.path.join(ROOT, "plugins", name)
        text = open(os.path.join(folder, "pyproject.toml")).read()
        assert f'name = "ember-{name}"' in text
        assert f'[project.entry-points.ember]\n{name} = "ember_{name}"' in text
        assert os.path.isfile(os.path.join(folder, "README.md")) and os.path.isdir(os.path.join(folder, "tests"))
        for dirpath, _, filenames in os.walk(os.path.join(folder, f"ember_{name}")):
            for f in filenames:
                if f.endswith(".py"):
                    src = open(os.path.join(dirpath, f)).read()
                    private = re.findall(r"\bember\._\w+|from ember\S* import _\w+|from ember\._\w+", src)
                    assert not private, f"plugins/{name}: {f} uses ember's private names {private}"


def test_core_depends_on_numpy_and_pluggy_only():
    text = open(os.path.join(ROOT, "pyproject.toml")).read()
    deps = re.search(r"^dependencies = \[(.*?)\]", text, re.S | re.M).group(1)
    names = {re.split(r"[<>=!~ ]", d.strip().strip('"'))[0] for d in deps.split(",") if d.strip()}
    assert names == {"numpy", "pluggy"}


def test_core_imports_no_backend():
    for dirpath, _, filenames in os.walk(os.path.join(ROOT, "core")):
        for f in filenames:
            if f.endswith(".py"):
                src = open(os.path.join(dirpath, f)).read()
                for backend in ("ember_cpu_numpy", "ember_opencl", "ember_cuda_cupy", "import cupy", "import pyopencl"):
                    assert backend not in src, f"{f} mentions {backend}"


def test_the_cuda_backend_pulls_no_cupy_wheel_by_itself():
    """cupy (several hundred MB, one wheel per CUDA major version) comes only through an extra."""
    text = open(os.path.join(ROOT, "backends", "cuda_cupy", "pyproject.toml")).read()
    deps = re.search(r"^dependencies = \[(.*?)\]", text, re.S | re.M).group(1)
    assert "cupy" not in deps
    assert 'cuda12 = ["cupy-cuda12x' in text and 'cuda13 = ["cupy-cuda13x' in text
