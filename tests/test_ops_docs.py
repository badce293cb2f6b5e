"""Every python block of docs/tensors.md runs as written (each in a fresh namespace)."""
import os
import re

import pytest

DOC = os.path.join(os.path.dirname(__file__), "..", "docs", "tensors.md")
BLOCKS = re.findall(r"```python\n(.*?)```", open(DOC).read(), re.S)


def test_the_guide_has_examples():
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("k", range(len(BLOCKS)))
def test_guide_example_runs(k):
    exec(compile(BLOCKS[k], f"docs/tensors.md block {k}", "exec"), {})
