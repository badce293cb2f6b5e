"""The benchmark runner: ``python -m benchmarks [--backend NAME] [--only PATTERN] [--quick]``.

Prints a table of median times (ember, numpy by hand, PyTorch when installed) with the ratios
ember/numpy and ember/torch, and writes it to ``benchmarks/RESULTS.md`` with the machine's
description (``--no-write`` to skip).
"""
from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import platform
import statistics
import sys
import time

from benchmarks.registry import WORKLOADS, Context

HERE = os.path.dirname(os.path.abspath(__file__))


def load_workloads():
    import benchmarks.workloads as pkg
    for m in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        importlib.import_module(f"benchmarks.workloads.{m.name}")


def time_fn(fn, min_time: float = 0.4, max_reps: int = 10000, warmup: int = 2) -> float:
    """Median seconds per call over repeated batches (auto-sized to ~min_time in total)."""
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    batch = max(1, min(max_reps, int(0.02 / one)))
    samples = []
    end = time.perf_counter() + min_time
    while len(samples) < 5 or (time.perf_counter() < end and len(samples) < 50):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter() - t0) / batch)
    return statistics.median(samples)


def fmt_time(s: float) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def machine() -> str:
    import numpy
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    n = os.cpu_count()
    s = f"{cpu}, {n} cores, Python {platform.python_version()}, numpy {numpy.__version__}"
    try:
        import torch
        s += f", PyTorch {torch.__version__} ({torch.get_num_threads()} threads)"
    except ImportError:
        s += ", PyTorch not installed"
    return s


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks")
    p.add_argument("--backend", default="cpu_numpy", help="ember backend: cpu_numpy, opencl, cuda_cupy")
    p.add_argument("--only", default="", help="run workloads whose name contains this")
    p.add_argument("--quick", action="store_true", help="shorter timing, skip slow workloads")
    p.add_argument("--no-write", action="store_true", help="don't write benchmarks/RESULTS.md")
    p.add_argument("--output", default=os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args(argv)
    import ember
    from ember import _plugins
    _plugins.load()
    spec = _plugins.backends.get(args.backend)
    if spec is None:
        print(f"no ember backend named {args.backend!r} (installed: {', '.join(sorted(_plugins.backends))})")
        return 2
    device = spec.device_type if spec.device_type == "cpu" else f"{spec.device_type}:0"
    try:
        import torch
        torch.set_grad_enabled(True)
    except ImportError:
        torch = None
    tdev = "cuda" if spec.device_type == "cuda" and torch is not None and torch.cuda.is_available() else "cpu"
    ctx = Context(args.backend, device, torch, tdev)
    load_workloads()
    rows = []
    for w in WORKLOADS:
        if args.only and args.only not in w.name:
            continue
        if args.quick and not w.quick:
            continue
        impls = w.fn(ctx)
        times = {}
        for impl in ("ember", "numpy", "torch"):
            f = impls.get(impl)
            if f is None:
                continue
            try:
                times[impl] = time_fn(f, min_time=0.15 if args.quick else 0.5)
            except Exception as e:  # a failing implementation is reported, not fatal
                print(f"  {w.name} [{impl}] failed: {type(e).__name__}: {e}", file=sys.stderr)
        rows.append((w, times, impls.get("note", "")))
        e, n, t = times.get("ember"), times.get("numpy"), times.get("torch")
        print(f"{w.name:<34} ember {fmt_time(e):>10}  numpy {fmt_time(n):>10}  torch {fmt_time(t):>10}"
              f"  e/np {e / n if e and n else float('nan'):6.2f}  e/torch {e / t if e and t else float('nan'):6.2f}")
    table = render(rows, args.backend, device)
    if not args.no_write:
        write_results(args.output, args.backend, table)
    return 0


def render(rows, backend, device) -> str:
    lines = [f"Backend `{backend}` (device `{device}`) on {machine()}.", "",
             "| workload | group | ember | numpy | torch | ember/numpy | ember/torch | notes |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for w, times, note in rows:
        e, n, t = times.get("ember"), times.get("numpy"), times.get("torch")
        rn = f"{e / n:.2f}" if e and n else "-"
        rt = f"{e / t:.2f}" if e and t else "-"
        lines.append(f"| {w.name} | {w.group} | {fmt_time(e)} | {fmt_time(n)} | {fmt_time(t)} | {rn} | {rt} | {note} |")
    return "\n".join(lines)


def write_results(path, backend, table) -> None:
    """Replace this backend's section of RESULTS.md (other backends' sections are kept)."""
    head = "# Benchmark results\n\nWritten by `python -m benchmarks`; each backend's section is replaced when it is rerun.\n"
    sections = {}
    if os.path.exists(path):
        cur = None
        for line in open(path).read().splitlines():
            if line.startswith("## backend "):
                cur = line[len("## backend "):].strip()
                sections[cur] = []
            elif cur is not None:
                sections[cur].append(line)
        sections = {k: "\n".join(v).strip() for k, v in sections.items()}
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    sections[backend] = f"_{stamp}_\n\n{table}"
    with open(path, "w") as f:
        f.write(head)
        for k in sorted(sections):
            f.write(f"\n## backend {k}\n\n{sections[k]}\n")
