"""ember-cuda-cupy's logic tests run on the fake cupy in ``fakecupy/`` (numpy underneath; see its
docstring): this puts it first on ``sys.path`` before anything imports cupy, so every test here,
the whole conformance suite included, exercises the backend's real code on device type ``cuda``
without a GPU. What that can't show (the CUDA C, cuBLAS/cuRAND/NCCL themselves, speed) is for
``gpu_check.sh`` on a machine with a GPU."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "fakecupy"))
sys.path.insert(0, HERE)
if "cupy" in sys.modules and not getattr(sys.modules["cupy"], "__fake__", False):
    raise RuntimeError("the real cupy was imported before the fake one could be installed")
os.environ.setdefault("FAKECUPY_DEVICES", "2")
