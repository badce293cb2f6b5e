"""The corpus (examples/corpus/): ordinary PyTorch programs -- ``import torch``, nothing
ember-specific -- run unmodified on ember through ``python -m ember.testing.torch_alias``, each
in a subprocess on small synthetic data, and must finish with exit status 0 and its
``loss fell: first -> last`` line (each script asserts that the loss fell before printing it).

On cpu they run everywhere (the cpu_numpy tox env); on opencl where ember-opencl and an OpenCL
device are there (``tox -e examples``, which has PoCL and sets ``EMBER_REQUIRE_EXTRAS=1`` so the
device cannot be missing there). tests/torch_oracle/test_corpus_torch.py runs the same scripts
with the real PyTorch, which shows they are genuine PyTorch programs."""
import importlib.util
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "examples", "corpus")

# (id, script, extra arguments); every script of examples/corpus appears at least once
CASES = [
    ("mnist_cnn", "mnist_cnn.py", []),
    ("resnet", "resnet.py", []),
    ("dcgan", "dcgan.py", []),
    ("vae", "vae.py", []),
    ("word_lm_lstm", "word_language_model.py", ["--model", "LSTM"]),
    ("word_lm_gru", "word_language_model.py", ["--model", "GRU"]),
    ("word_lm_transformer", "word_language_model.py", ["--model", "Transformer"]),
    ("gpt_bfloat16", "gpt.py", ["--dtype", "bfloat16"]),
    ("gpt_float16_gradscaler", "gpt.py", ["--dtype", "float16"]),
    ("gcn", "gcn.py", ["--model", "gcn"]),
    ("gat", "gcn.py", ["--model", "gat"]),
    ("mnist_hogwild", "mnist_hogwild.py", []),
    ("time_sequence_lbfgs", "time_sequence_prediction.py", []),
    ("siamese", "siamese_network.py", []),
    ("super_resolution", "super_resolution.py", []),
    ("reinforce_categorical", "reinforce.py", ["--policy", "categorical"]),
    ("reinforce_gaussian", "reinforce.py", ["--policy", "gaussian"]),
]
# Hogwild shares the model through CPU shared memory between processes
NOT_ON_OPENCL = {"mnist_hogwild"}
LOSS_FELL = re.compile(r"^loss fell: (\S+) -> (\S+)$", re.M)


def run_script(python, script, args, device, timeout=300):
    """Runs ``python script --device DEVICE args`` (without ``--device`` where ``device`` is None:
    the script's own choice) from the corpus folder; returns the process with a ``log`` of its
    output for assertion messages."""
    # one thread each: the matrices are small, and BLAS threads only contend on a busy machine
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cmd = [*python, os.path.join(CORPUS, script), *(["--device", device] if device else []), *args]
    proc = subprocess.run(cmd, cwd=CORPUS, env=env, capture_output=True, text=True, timeout=timeout)
    proc.log = (f"{' '.join(cmd)}\nrc={proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n"
                f"--- stderr\n{proc.stderr[-6000:]}")
    return proc


def assert_loss_fell(proc):
    assert proc.returncode == 0, proc.log
    m = LOSS_FELL.search(proc.stdout)
    assert m, proc.log
    assert float(m.group(2)) < float(m.group(1)), proc.log


def test_every_script_is_run():
    scripts = sorted(f for f in os.listdir(CORPUS) if f.endswith(".py"))
    assert scripts == sorted({s for _, s, _ in CASES})
    assert len(scripts) == 12


EMBER = (sys.executable, "-m", "ember.testing.torch_alias")


@pytest.mark.parametrize("script,args", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_corpus_on_cpu(script, args):
    assert_loss_fell(run_script(EMBER, script, args, "cpu"))


def test_the_scripts_choose_a_device_themselves():
    """Without --device: ``torch.accelerator.current_accelerator()`` where there is one, else the cpu."""
    proc = run_script(EMBER, "mnist_cnn.py", ["--epochs", "1"], None)
    assert_loss_fell(proc)
    assert "Using device: " in proc.stdout, proc.log


def _opencl_missing():
    """Why the opencl runs cannot happen here, or None."""
    for module, install in (("ember_opencl", "pip install -e backends/opencl[pocl]"),
                            ("pyopencl", "pip install pyopencl")):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed ({install})"
    import pyopencl
    try:
        if not any(p.get_devices() for p in pyopencl.get_platforms()):
            return "no OpenCL device (PoCL: pip install pocl-binary-distribution)"
    except pyopencl.Error as e:
        return f"no OpenCL platform ({e}; PoCL: pip install pocl-binary-distribution)"
    return None


@pytest.mark.parametrize("script,args", [c[1:] for c in CASES if c[0] not in NOT_ON_OPENCL],
                         ids=[c[0] for c in CASES if c[0] not in NOT_ON_OPENCL])
def test_corpus_on_opencl(script, args):
    missing = _opencl_missing()
    if missing:
        if os.environ.get("EMBER_REQUIRE_EXTRAS") == "1":
            pytest.fail(f"EMBER_REQUIRE_EXTRAS=1 but {missing}")
        pytest.skip(missing)
    assert_loss_fell(run_script(EMBER, script, args, "opencl", timeout=600))
