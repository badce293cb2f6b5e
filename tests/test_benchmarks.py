"""The benchmark runner works: interleaved timing, ratios, targets and the RESULTS.md section it
writes (other text in the file is kept). Speed itself is never asserted."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import run  # noqa: E402
from benchmarks.registry import Target  # noqa: E402


def test_measure_interleaves_and_pairs_ratios():
    calls = []
    res = run.measure({"ember": lambda: calls.append("e"), "numpy": lambda: calls.append("n")},
                      budget=0.0, sample=1e-4, min_rounds=4)
    assert len(res["ember"]["wall"]) == len(res["numpy"]["wall"]) == 4
    times, cpu, ratios = run.summarize(res)
    assert set(times) == {"ember", "numpy"} and times["ember"] > 0
    assert ratios["numpy"] > 0 and cpu["ember"] >= 0


def test_failing_implementation_is_reported_not_fatal():
    def boom():
        raise ValueError("no")
    res = run.measure({"ember": lambda: None, "torch": boom}, budget=0.0, min_rounds=2)
    assert "ValueError: no" in res["torch"]["error"]
    assert len(res["ember"]["wall"]) == 2


def test_targets():
    t = Target("torch", 1.5)
    assert t.met(t.measure({"torch": 1.2}, {"ember": 1.0, "torch": 0.8}))
    over = Target("numpy", 5e-6, "over")
    assert over.measure({}, {"ember": 9e-6, "numpy": 1e-6}) == pytest.approx(8e-6)
    assert over.met(8e-6) is False
    assert Target("ember", 40e-6, "abs").measure({}, {"ember": 3e-5}) == 3e-5
    assert t.measure({}, {"ember": 1.0}) is None


def test_quick_run_writes_its_section(tmp_path, capsys):
    out = tmp_path / "RESULTS.md"
    out.write_text("# Benchmark results\n\nhand-written notes stay.\n")
    argv = ["--quick", "--no-torch", "--budget", "0.05", "--only", "add 8x8 (overhead)",
            "--only", "sum 8x8", "--output", str(out)]
    assert run.main(argv) == 0
    printed = capsys.readouterr().out
    assert "add 8x8 (overhead)" in printed and "sum 8x8 dim=1" in printed
    text = out.read_text()
    assert "hand-written notes stay." in text
    assert "<!-- ember-bench begin cpu_numpy -->" in text and "| add 8x8 (overhead) |" in text
    assert "≤ 5 µs over numpy" in text          # the target is evaluated
    # a second run replaces the section instead of appending another
    assert run.main(argv + ["--only", "mul 1M"]) == 0
    text = out.read_text()
    assert text.count("<!-- ember-bench begin cpu_numpy -->") == 1 and "| mul 1M f32 |" in text
    assert "hand-written notes stay." in text


def test_unknown_backend_is_refused(capsys):
    assert run.main(["--backend", "no_such_backend", "--no-write", "--no-torch"]) == 2
    assert "no_such_backend" in capsys.readouterr().err


def test_list():
    assert run.main(["--list"]) == 0


def test_isolated_run_times_each_implementation_in_its_own_process(tmp_path, capsys):
    out = tmp_path / "RESULTS.md"
    argv = ["--quick", "--no-torch", "--budget", "0.05", "--only", "add 8x8 (overhead)", "--output", str(out),
            "--json", str(tmp_path / "raw.json"), "--isolate"]
    assert run.main(argv) == 0
    assert "add 8x8 (overhead)" in capsys.readouterr().out
    text = out.read_text()
    assert "| add 8x8 (overhead) |" in text and "each implementation ran in its own worker process" in text
    import json
    raw = json.loads((tmp_path / "raw.json").read_text())["raw"]["add 8x8 (overhead)"]
    assert set(raw) == {"ember", "numpy"} and len(raw["ember"]["wall"]) == len(raw["numpy"]["wall"]) >= 3


def test_remote_worker_reports_a_missing_workload_as_an_error():
    wk = run.Remote("numpy", {"backend": "cpu_numpy", "against": None, "threads": 1})
    try:
        got = wk.prepare("no such workload", 0.001, 1)
        assert "KeyError" in got["error"]
        assert wk.prepare("add 8x8 (overhead)", 0.001, 1)["calls"] >= 1
        wall, cpu = wk.sample(3)
        assert wall > 0 and cpu >= 0
    finally:
        wk.close()
    assert wk.proc.returncode == 0


def test_threads_1_keeps_one_process_by_default():
    assert run.parse_args(["--threads", "1"]).isolate is None
    assert run.parse_args(["--threads", "1", "--isolate"]).isolate is True
    assert run.parse_args(["--no-isolate"]).isolate is False
