"""The examples of docs/distributed.md run as written, on two ranks."""
import os
import re
import subprocess
import sys

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs",
                   "distributed.md")


def _blocks():
    return re.findall(r"```python\n(.*?)```", open(DOC).read(), re.S)


def _launch(tmp_path, code):
    script = tmp_path / "script.py"
    script.write_text(code)
    return subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc", "2", str(script)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})


def test_the_training_script_and_the_collectives_example_run(tmp_path):
    blocks = _blocks()
    train = next(b for b in blocks if b.startswith("# train.py"))
    snippet = next(b for b in blocks if b.startswith("dist.init_process_group()\nt = ember.ones(3)"))
    snippet = snippet.replace("dist.destroy_process_group()\n", "")  # checked below, before it ends
    code = (train + snippet
            + "assert t.tolist() == [3.0] * 3 and names == ['worker-0', 'worker-1'], (t, names)\nprint('example ok')\n")
    r = _launch(tmp_path, code)
    assert r.returncode == 0, r.stderr
    assert "trained on 2 ranks" in r.stdout and r.stdout.count("example ok") == 2, r.stdout
    assert (tmp_path / "model.pt").exists()
