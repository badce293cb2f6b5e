"""These tests need real PyTorch (``tox -e torch_interop`` installs it). Without it they are not
collected: ember itself never depends on torch, and the torch-free side of the interop (loading
committed ``torch.save`` fixtures) is covered by ``tests/test_serialization_torch_files.py``."""
import importlib.util

if importlib.util.find_spec("torch") is None:
    collect_ignore_glob = ["test_*.py"]
