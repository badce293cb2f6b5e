"""The corpus (examples/corpus/) with the real PyTorch: each script runs as ``python script.py``
(``import torch`` is torch itself) and its loss falls -- the programs tests/test_corpus.py runs on
ember are genuine PyTorch programs, not programs written around ember."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from test_corpus import CASES, assert_loss_fell, run_script  # noqa: E402


@pytest.mark.parametrize("script,args", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_corpus_with_real_torch(script, args):
    proc = run_script((sys.executable,), script, args, "cpu")
    assert_loss_fell(proc)


def test_the_scripts_choose_a_device_themselves():
    assert_loss_fell(run_script((sys.executable,), "mnist_cnn.py", ["--epochs", "1"], None))


def test_it_is_the_real_torch():
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.__name__, torch.__file__)"],
                         capture_output=True, text=True, timeout=120).stdout
    assert out.startswith("torch ") and "ember" not in out, out
