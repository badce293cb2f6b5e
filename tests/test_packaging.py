"""Packaging: the core's package list in pyproject.toml matches core/, and the distribution
layout follows docs/design.md (backends and plugins are separate distributions; plugins use ember's
public API only)."""
import os
import re
import subprocess
import sys
import textwrap

import pytest
from primitives_backend import PrimitivesBackend

import ember
import ember.backend
from ember import _plugins, cli
from ember.backend import PLUGIN_API_VERSION

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


# -- what an index gets ---------------------------------------------------------------------------

DISTRIBUTIONS = {".": "ember", "backends/cpu_numpy": "ember-cpu-numpy", "backends/opencl": "ember-opencl",
                 "backends/cuda_cupy": "ember-cuda-cupy", "plugins/lookahead": "ember-lookahead",
                 "plugins/rmsnorm": "ember-rmsnorm"}


def _pyproject(folder):
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs tomllib (Python 3.11+)")
    with open(os.path.join(ROOT, folder, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


@pytest.mark.parametrize("folder", sorted(DISTRIBUTIONS))
def test_every_distribution_has_the_metadata_an_index_shows(folder):
    data = _pyproject(folder)
    project = data["project"]
    assert project["name"] == DISTRIBUTIONS[folder]
    # PEP 639: an SPDX expression and the license file shipped (setuptools 77 is the first to support both)
    assert project["license"] == "BSD-3-Clause" and project["license-files"] == ["LICENSE"]
    assert data["build-system"]["requires"] == ["setuptools>=77"]
    assert open(os.path.join(ROOT, folder, "LICENSE")).read() == open(os.path.join(ROOT, "LICENSE")).read()
    assert "Copyright (c) 2026 the ember developers" in open(os.path.join(ROOT, "LICENSE")).read()
    assert project["authors"] == [{"name": "the ember developers"}]
    assert project["requires-python"] == ">=3.10"
    assert project["keywords"] and not any(c.startswith("License ::") for c in project["classifiers"])
    assert "Programming Language :: Python :: 3.10" in project["classifiers"]
    assert set(project["urls"]) == {"Homepage", "Documentation", "Source", "Issues"}
    readme = open(os.path.join(ROOT, folder, project["readme"])).read()
    relative = [link for link in re.findall(r"\]\(([^)\s]+)\)", readme) if not re.match(r"[a-z]+:", link)]
    assert not relative, f"{folder}: the index page would have broken relative links {relative}"
    if folder != ".":
        assert "ember>=0.1.0,<0.2" in project["dependencies"], project["dependencies"]
    assert project["version"] == ember.__version__


def test_the_core_has_an_index_page_and_a_cpu_extra():
    project = _pyproject(".")["project"]
    assert project["readme"] == "docs/pypi.md"  # README.md is the checkout's guide (set-up lines, relative links)
    assert project["optional-dependencies"]["cpu"] == ["ember-cpu-numpy>=0.1.0,<0.2"]
    page = open(os.path.join(ROOT, "docs", "pypi.md")).read()
    assert "pip install 'ember[cpu]'" in page and "pip install -e" not in page


# -- versions -------------------------------------------------------------------------------------

def test_versions_and_the_pytorch_api():
    assert ember.__version__ == ember.version.__version__ == "0.1.0"
    assert ember.version.torch_api == "2.13"
    assert ember.backend.PLUGIN_API_VERSION == 1
    r = subprocess.run([sys.executable, "-m", "ember", "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ember 0.1.0 (PyTorch API 2.13, plugin API 1)", r


def test_the_shipped_backends_declare_the_plugin_api():
    for folder in ("cpu_numpy", "opencl", "cuda_cupy"):
        module = "ember_" + folder
        src = open(os.path.join(ROOT, "backends", folder, module, "backend.py")).read()
        assert "\n    plugin_api_version = 1\n" in src, folder  # a literal: the version written for


class FutureBackend(PrimitivesBackend):
    plugin_api_version = PLUGIN_API_VERSION + 1


class CurrentBackend(PrimitivesBackend):
    plugin_api_version = PLUGIN_API_VERSION


class _Plugin:
    def __init__(self, cls):
        self.cls = cls

    @ember.hookimpl
    def ember_register_backends(self, register):
        register(self.cls.__name__.lower(), self.cls.__name__.lower() + "dev", f"test_packaging:{self.cls.__name__}")


def test_an_incompatible_backend_is_refused_with_a_clear_message(capsys):
    name = _plugins.register_plugin(_Plugin(FutureBackend), name="future-plugin")
    try:
        want = ("incompatible backend: 'futurebackend' for device type 'futurebackenddev' (plugin 'future-plugin') "
                "was written for ember plugin API 2, and this ember 0.1.0 speaks plugin API 1; upgrade ember "
                "(pip install -U ember) or install a release of the backend written for plugin API 1")
        for _ in range(2):  # the second use gives the same answer
            with pytest.raises(RuntimeError) as e:
                ember.ones(2, device="futurebackenddev")
            assert str(e.value) == want
        assert cli.main(["plugins"]) == 0
        out = capsys.readouterr().out
        assert f"device futurebackenddev: backend futurebackend, priority 0, unavailable: {want}" in out
    finally:
        _plugins.unregister_plugin(name)


def test_a_backend_of_this_plugin_api_loads():
    name = _plugins.register_plugin(_Plugin(CurrentBackend), name="current-plugin")
    try:
        assert ember.ones(2, device="currentbackenddev").sum().item() == 2
    finally:
        _plugins.unregister_plugin(name)


# -- install commands -----------------------------------------------------------------------------

def test_install_commands_name_the_checkout_or_the_index(monkeypatch, tmp_path):
    assert _plugins.checkout_root() == ROOT  # these tests run from a checkout
    monkeypatch.chdir(ROOT)
    assert _plugins.install_command("cuda") == "pip install -e 'backends/cuda_cupy[cuda12]'"
    monkeypatch.chdir(tmp_path)  # outside the checkout: the absolute path
    assert _plugins.install_command("opencl") == f"pip install -e '{os.path.join(ROOT, 'backends', 'opencl')}[pocl]'"
    monkeypatch.setattr(_plugins, "checkout_root", lambda: None)  # an installed package
    assert _plugins.install_command("cpu") == "pip install ember-cpu-numpy"
    assert _plugins.install_command("cuda") == "pip install 'ember-cuda-cupy[cuda12]'"
    assert _plugins.install_command("opencl") == "pip install 'ember-opencl[pocl]'"


# -- a script next to a checkout folder named ember ------------------------------------------------

def _next_to_a_checkout(tmp_path, code):
    (tmp_path / "ember").symlink_to(ROOT, target_is_directory=True)  # a checkout folder named ember
    (tmp_path / "script.py").write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_a_script_next_to_a_checkout_folder_gets_the_installed_package(tmp_path):
    r = _next_to_a_checkout(tmp_path, """
        import os, sys
        import ember
        import ember.nn
        print(ember.zeros(2).tolist(), os.path.basename(os.path.dirname(ember.__file__)), ember.nn.Linear.__name__)
        print(sys.modules['ember'] is ember, ember.__spec__.origin.startswith(os.getcwd()))
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[0.0, 0.0] ember Linear", "True False"] or \
        r.stdout.splitlines() == ["[0.0, 0.0] core Linear", "True False"], r.stdout


def test_a_script_next_to_a_checkout_folder_without_an_installed_ember_is_told_why(tmp_path):
    r = _next_to_a_checkout(tmp_path, """
        import os, sys
        here = os.path.dirname(os.path.abspath(__file__))
        # no ember installed: no editable finder, no other sys.path entry holding the package
        sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or '.') == here
                       or not os.path.isfile(os.path.join(p, 'ember', '__init__.py'))]
        try:
            import ember
        except ImportError as e:
            print(e)
    """)
    assert r.returncode == 0, r.stderr
    checkout = os.path.join(str(tmp_path), "ember")
    assert r.stdout.strip() == (
        f"'import ember' found {checkout}, a checkout of ember's repository, not the package (which is its core/ "
        "folder): the script runs next to that folder, so Python looks there first, and no installed ember was found "
        f"elsewhere. Install it from the checkout: pip install -e '{checkout}' -e "
        f"'{os.path.join(checkout, 'backends', 'cpu_numpy')}' (or from an index: pip install 'ember[cpu]'); or run "
        "the script from another folder."), r.stdout
