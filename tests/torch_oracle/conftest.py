"""These tests need real PyTorch (``tox -e oracle`` installs the 2.13.0 CPU build). Without it they
are not collected: ember itself never depends on torch, and the torch-free side of the interop
(loading committed ``torch.save`` fixtures) is covered by ``tests/test_serialization_torch_files.py``.

The differential tests (``test_oracle_*.py``) draw a fixed number of examples per op under the
``oracle-ci`` hypothesis profile (derandomized; tox sets ``HYPOTHESIS_PROFILE=ci``). A nightly-size
run: ``--oracle-budget nightly`` (500 examples per op, fresh randomness), or any count with
``EMBER_ORACLE_EXAMPLES=N`` (``EMBER_ORACLE_RANDOM=1`` for fresh randomness).
"""
import importlib.util
import os
import sys

if importlib.util.find_spec("torch") is None:
    collect_ignore_glob = ["test_*.py"]
else:
    sys.path.insert(0, os.path.dirname(__file__))

CI_EXAMPLES = 100
NIGHTLY_EXAMPLES = 500


def pytest_addoption(parser):
    parser.addoption("--oracle-budget", choices=("ci", "nightly"), default="ci",
                     help="examples per op of the PyTorch-oracle tests: ci (fixed, derandomized) or nightly")


def pytest_configure(config):
    if importlib.util.find_spec("torch") is None:
        return
    from hypothesis import HealthCheck, settings
    nightly = config.getoption("--oracle-budget", "ci") == "nightly"
    count = int(os.environ.get("EMBER_ORACLE_EXAMPLES", NIGHTLY_EXAMPLES if nightly else CI_EXAMPLES))
    randomize = nightly or os.environ.get("EMBER_ORACLE_RANDOM") == "1"
    settings.register_profile("oracle", max_examples=count, derandomize=not randomize, deadline=None,
                              database=None, print_blob=True,
                              suppress_health_check=list(HealthCheck))


_PENDING = {"passed": [], "failed": []}


def pytest_runtest_logreport(report):
    if report.when == "call" and "test_pending_bug[" in report.nodeid:
        key = report.nodeid.split("[", 1)[1].rstrip("]")
        _PENDING["passed" if report.passed else "failed"].append(key)


def pytest_terminal_summary(terminalreporter):
    done, left = _PENDING["passed"], _PENDING["failed"]
    if done or left:
        terminalreporter.section("PyTorch oracle: pending bugs")
        terminalreporter.write_line(f"{len(done)} of {len(done) + len(left)} pending cases now pass "
                                    "(remove their lines from known_differences.toml):")
        for key in done:
            terminalreporter.write_line(f"  {key}")
