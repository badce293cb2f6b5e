"""The user guide runs as written.

Every ```python block of every ``docs/*.md`` page and of the README is executed; the blocks of one page run in
order in one namespace (a fresh ``__main__`` module, in a temporary working directory), as a
reader pasting them one after another into a script would. On the pages in ``CHECK_OUTPUT``
each ``print(...)  # output`` line must print that output. Blocks that are not meant to run are
marked with another info string: ```text, ```bash, ```toml, or ```py for Python shown but not
run (it still renders as Python). A page that needs an optional package or hardware says so in
``NEEDS`` and runs where it is there (``tox -e examples`` has MPI and safetensors; docs/cuda.md
needs two GPUs), as the tests under tests/distributed do.

The links of the guide and the README are checked too: every relative link points at a file of
the repository, and every ``#anchor`` at a heading of its page.
"""
import contextlib
import importlib.util
import io
import os
import re
import sys
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
PAGES = sorted(f for f in os.listdir(DOCS) if f.endswith(".md"))
RUN = [f"docs/{p}" for p in PAGES] + ["README.md"]  # files (from the repository root) whose python blocks run
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
def _gpus(n: int):
    def check() -> bool:
        import ember
        return ember.cuda.device_count() >= n
    return check


# page -> what its python blocks need: module names, or callables that say whether the machine has it
NEEDS = {"docs/distributed.md": ["mpi4py"], "docs/serialization.md": ["safetensors"],
         "docs/onnx.md": ["onnx", "onnxruntime"],
         "docs/cuda.md": ["mpi4py", _gpus(2)]}
# pages whose every print(...) line ends with "# what it prints" ("..." at the end: a prefix)
CHECK_OUTPUT = {"docs/amp.md", "docs/devices.md", "docs/extending.md", "docs/sparse.md", "docs/compat.md",
                "docs/multiprocessing.md", "docs/complex.md", "README.md", "docs/linalg.md", "docs/fft.md",
                "docs/distributions.md"}


def blocks(path: str) -> list:
    """The python blocks of a markdown file (a path from the repository root)."""
    return BLOCK.findall(open(os.path.join(ROOT, path), encoding="utf-8").read())


def runnable(page: str) -> bool:
    return all(need() if callable(need) else importlib.util.find_spec(need) is not None
               for need in NEEDS.get(page, ()))


def test_there_is_a_guide():
    for page in ("index.md", "tensors.md", "autograd.md", "nn.md", "optim.md", "data.md", "serialization.md",
                 "devices.md", "distributed.md", "extending.md", "differences.md"):
        assert page in PAGES, f"docs/{page} is missing"
    assert sum(len(blocks(p)) for p in RUN) >= 60


@pytest.mark.parametrize("page", [p for p in RUN if blocks(p) and runnable(p)])
def test_page_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main = types.ModuleType("__main__")  # classes defined on the page pickle as __main__.X (workers, save)
    main.__file__ = os.path.join(str(tmp_path), "doc_example.py")
    monkeypatch.setitem(sys.modules, "__main__", main)
    if page == "docs/torch_alias.md":
        # the alias refuses a process that imported the real torch (the oracle tests do, in a run
        # of the whole tests/ tree): hide those modules for the page, as a fresh process has none
        for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
            monkeypatch.delitem(sys.modules, name)
    import ember
    ember.manual_seed(0)
    for i, code in enumerate(blocks(page), 1):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"{page}, python block {i}", "exec"), main.__dict__)
        if page in CHECK_OUTPUT:
            expected = re.findall(r"^\s*print\(.*\)\s+#\s*(.*)$", code, re.M)
            printed = out.getvalue().splitlines()
            assert len(printed) == len(expected), f"{page} block {i} printed {printed}, expected {expected}"
            for got, want in zip(printed, expected):
                ok = got.startswith(want[:-3]) if want.endswith("...") else got.strip() == want.strip()
                assert ok, f"{page} block {i}: printed {got!r}, the page says {want!r}"


# ----------------------------------------------------------------------------------------------
# links


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: str) -> set:
    text = re.sub(r"^```.*?^```", "", open(path, encoding="utf-8").read(), flags=re.S | re.M)
    seen, out = {}, set()
    for h in re.findall(r"^#{1,6} (.+)$", text, re.M):
        s = _slug(h)
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def _links(path: str) -> list:
    text = re.sub(r"^```.*?^```", "", open(path, encoding="utf-8").read(), flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("doc", ["README.md"] + [f"docs/{p}" for p in PAGES] + ["examples/data/README.md"])
def test_links_resolve(doc):
    path = os.path.join(ROOT, doc)
    broken = []
    for link in _links(path):
        if re.match(r"[a-z]+:", link):  # http:, https:, mailto:
            continue
        target, _, anchor = link.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
        if not os.path.exists(full):
            broken.append(f"{link} (no such file)")
        elif anchor and full.endswith(".md") and anchor not in _anchors(full):
            broken.append(f"{link} (no heading #{anchor})")
    assert not broken, f"{doc}: " + ", ".join(broken)


def test_the_index_links_every_page():
    linked = {l.split("#")[0] for l in _links(os.path.join(DOCS, "index.md"))}
    assert set(PAGES) - {"index.md"} <= linked, f"not linked from docs/index.md: {set(PAGES) - {'index.md'} - linked}"


def test_slugs_follow_github():
    assert _slug("Safe by default: `weights_only=True`") == "safe-by-default-weights_onlytrue"
    assert _slug("Devices: `map_location`") == "devices-map_location"
    assert _slug("Fast path: fused update kernels") == "fast-path-fused-update-kernels"
