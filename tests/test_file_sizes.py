"""Files of one idea: no python file of the core or of a backend grows past 800 lines (cut it by
concept instead; docs/design.md lists the families)."""
from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIMIT = 800


def test_no_python_file_over_the_limit():
    long = []
    for tree in (ROOT / "core", ROOT / "backends"):
        for path in sorted(tree.rglob("*.py")):
            if ".egg-info" in str(path):
                continue
            n = len(path.read_text().splitlines())
            if n > LIMIT:
                long.append(f"{path.relative_to(ROOT)}: {n} lines")
    assert not long, f"python files over {LIMIT} lines:\n" + "\n".join(long)
