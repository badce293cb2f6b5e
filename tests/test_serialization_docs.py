"""docs/serialization.md runs as written: its python blocks run in order in one namespace (in a
temporary directory), and every ``print(...)  # output`` line prints that output."""
import contextlib
import io
import os
import re
import sys
import types

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "serialization.md")


def _blocks():
    return re.findall(r"```python\n(.*?)```", open(DOC).read(), re.S)


def test_the_guide_runs_and_prints_what_it_says(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main = types.ModuleType("__main__")       # classes defined in the guide pickle as __main__.X
    monkeypatch.setitem(sys.modules, "__main__", main)
    blocks = _blocks()
    assert len(blocks) >= 10
    for i, code in enumerate(blocks):
        expected = [m.group(1).strip() for m in re.finditer(r"^\s*print\(.*\)\s+#\s*(.*)$", code, re.M)]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"{DOC}:block{i}", "exec"), main.__dict__)
        printed = [line.strip() for line in out.getvalue().splitlines()]
        assert printed == expected, f"block {i}:\n{code}"
