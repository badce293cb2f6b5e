"""Every python block of docs/optim.md runs as written."""
import os
import re

import pytest

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "optim.md")
BLOCKS = re.findall(r"```python\n(.*?)```", open(DOC).read(), re.S)


def test_the_guide_has_examples():
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_example_runs(i, capsys):
    exec(compile(BLOCKS[i], f"docs/optim.md block {i + 1}", "exec"), {"__name__": "__doc_example__"})
