"""The benchmark runner: ``python -m benchmarks [--backend NAME] [--only PATTERN] [--quick]``.

Every workload is run in ember, in hand-written numpy and in PyTorch (when installed), each in its
own worker process unless ``--threads 1`` (``--isolate``/``--no-isolate``); with ``--against BACKEND``
also in ember on a reference backend (the opencl
targets are ratios against cpu_numpy). The table of times, ratios and targets is printed and
written into this backend's section of ``benchmarks/RESULTS.md`` (``--no-write`` to skip); the
rest of that file (other backends, the method, the optimisation log) is kept.

Timing is built for a shared machine whose other users come and go:

* the implementations of one workload are measured **interleaved**: each round times one sample
  of every implementation, in a rotating order, so a burst of foreign load hits all of them;
* a sample is a batch of calls sized to ~``--sample-ms`` (one call for slow workloads);
* the reported time is the median over rounds, and each ratio is the **median of the per-round
  ratios** (paired samples, so a slow round cancels out);
* CPU time (``time.process_time``: every thread of the process) is recorded beside wall time and
  its ratio is reported too: it does not grow when the scheduler takes the CPU away;
* with ``--isolate`` each implementation runs in a worker process of its own
  (:mod:`benchmarks.worker`), so one library's spinning thread pools never share a process with
  another's; the parent still interleaves the rounds, asking each worker for one sample at a time,
  and a worker answers only once its thread pools have stopped spinning (``worker.settle``), so
  one library's idle-spinning pool never takes the cores from the next library's sample;
* ``--threads N`` sets OMP/OpenBLAS/MKL threads and ``torch.set_num_threads`` before anything is
  imported (``--threads 1`` keeps spinning BLAS threads from fighting other jobs for 2 cores).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import pkgutil
import platform
import statistics
import subprocess
import sys
import time
import traceback

from benchmarks.registry import TARGETS, WORKLOADS, Context

HERE = os.path.dirname(os.path.abspath(__file__))
IMPLS = ("ember", "ref", "numpy", "torch")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


# -- timing ------------------------------------------------------------------------------------

def _call_time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def warm_up(fn, warmup: int = 2) -> float:
    """Warm ``fn`` up and return the time of one call (the best of two unless a call is slow)."""
    one = _call_time(fn)                     # the first call warms up
    if one < 0.2:                            # slow workloads: that one call will do
        for _ in range(warmup - 1):
            fn()
        one = min(_call_time(fn) for _ in range(2))
    return one


class Local:
    """An implementation run in this process: a zero-argument callable."""

    def __init__(self, fn):
        self.fn = fn

    def setup(self, sample: float, warmup: int) -> dict:
        first = warm_up(self.fn, warmup)
        return {"first": first, "calls": max(1, int(sample / max(first, 1e-7)))}

    def sample(self, n: int) -> tuple:
        fn = self.fn
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(n):
            fn()
        t1, c1 = time.perf_counter(), time.process_time()
        return (t1 - t0) / n, (c1 - c0) / n


def measure(impls: dict, budget: float = 2.0, sample: float = 0.03, min_rounds: int = 5,
            max_rounds: int = 200, warmup: int = 2) -> dict:
    """Time the implementations of ``impls`` (name -> zero-argument callable, or a :class:`Local`
    or :class:`Remote`, whose samples run in a worker process) interleaved.

    Returns name -> {"wall": [s per call per round], "cpu": [...], "calls": calls per sample};
    a callable that raises is left out and its error kept under "error" instead.
    """
    res: dict = {}
    live = {}
    for name, fn in impls.items():
        runner = fn if isinstance(fn, (Local, Remote)) else Local(fn)
        try:
            got = runner.setup(sample, warmup)
        except Exception as e:  # a failing implementation is reported, not fatal
            res[name] = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
            continue
        if "error" in got:
            res[name] = got
            continue
        live[name] = runner
        res[name] = {"wall": [], "cpu": [], "calls": got["calls"], "first": got["first"]}
    names = list(live)
    if names and max(res[n]["first"] for n in names) > 1.0:
        min_rounds = min(min_rounds, 3)              # seconds-long calls: three rounds suffice
    end = time.perf_counter() + budget
    r = 0
    while names and r < max_rounds and (r < min_rounds or time.perf_counter() < end):
        k = r % len(names)
        for name in names[k:] + names[:k]:          # rotate the order every round
            d = res[name]
            wall, cpu = live[name].sample(d["calls"])
            d["wall"].append(wall)
            d["cpu"].append(cpu)
        r += 1
    return res


class Remote:
    """An implementation timed in its own worker process (:mod:`benchmarks.worker`), so that its
    library's thread pools never share a process with another library's. The parent sends it
    "set up this workload" and "time one sample" messages, still interleaving the rounds."""

    def __init__(self, impl: str, opts: dict):
        self.impl = impl
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.worker", impl, json.dumps(opts)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=os.path.dirname(HERE), bufsize=1)
        self.workload = None

    def ask(self, msg: dict) -> dict:
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.impl} worker process ended (exit status {self.proc.wait()})")
        return json.loads(line)

    def prepare(self, workload: str, sample: float, warmup: int) -> dict:
        """Build ``workload`` in the worker and warm it up (before the rounds start)."""
        self.workload = workload
        self.ready = self.ask({"cmd": "setup", "workload": workload, "sample": sample, "warmup": warmup})
        return self.ready

    def setup(self, sample: float, warmup: int) -> dict:
        return self.ready

    def sample(self, n: int) -> tuple:
        r = self.ask({"cmd": "sample", "n": n})
        return r["wall"], r["cpu"]

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.close()
            except OSError:
                pass
            self.proc.wait(timeout=30)


def summarize(res: dict) -> tuple[dict, dict, dict]:
    """(median wall time per impl, median CPU time per impl, ratios) where ratios[other] is the
    median over rounds of ember's time / other's time in the same round, and ratios[other+"_cpu"]
    the same for CPU time."""
    times, cpu, ratios = {}, {}, {}
    for name, d in res.items():
        if d.get("wall"):
            times[name] = statistics.median(d["wall"])
            cpu[name] = statistics.median(d["cpu"])
    e = res.get("ember", {})
    for other in times:
        if other == "ember" or "ember" not in times:
            continue
        o = res[other]
        n = min(len(e["wall"]), len(o["wall"]))
        ratios[other] = statistics.median(e["wall"][i] / o["wall"][i] for i in range(n))
        pairs = [e["cpu"][i] / o["cpu"][i] for i in range(n) if o["cpu"][i] > 0]
        if pairs:
            ratios[other + "_cpu"] = statistics.median(pairs)
    return times, cpu, ratios


# -- formatting --------------------------------------------------------------------------------

def fmt_time(s) -> str:
    if s is None:
        return "-"
    if abs(s) < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if abs(s) < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def fmt_ratio(r) -> str:
    return "-" if r is None else f"{r:.2f}"


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
    s = (f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
         f"Python {platform.python_version()}, numpy {numpy.__version__}")
    try:
        from threadpoolctl import threadpool_info  # optional: names the BLAS numpy uses
        blas = [f"{i['internal_api']} {i['version']}"
                + (f" {i['architecture']} kernels" if i.get("architecture") else "")
                for i in threadpool_info() if i.get("user_api") == "blas"]
        if blas:
            s += f" ({', '.join(blas)})"
        if os.environ.get("OPENBLAS_CORETYPE"):  # a pinned kernel set changes every BLAS-bound figure
            s += f"; OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} set in the environment"
    except Exception:
        pass
    return s


def _load() -> str:
    try:
        return "load average %.1f %.1f %.1f" % os.getloadavg()
    except OSError:
        return "load average unknown"


def _target_cell(t, ratios, times):
    if t is None:
        return "", None
    v = t.measure(ratios, times)
    ok = t.met(v)
    if v is None:
        return f"{t.describe()}: not measured", None
    shown = fmt_ratio(v) if t.kind == "ratio" else fmt_time(v)
    return f"{t.describe()}: {shown} {'met' if ok else 'MISSED'}", ok


def render(rows: list, header: str, has: set) -> str:
    """The markdown section for one run: a table of times and ratios, then the targets."""
    cols = [("ember", "ember")] + [(k, lab) for k, lab in (("ref", "ember ref"), ("numpy", "numpy"),
                                                           ("torch", "torch")) if k in has]
    rcols = [(k, lab) for k, lab in (("ref", "e/ref"), ("numpy", "e/numpy"), ("torch", "e/torch"),
                                     ("torch_cpu", "e/torch CPU")) if k.split("_")[0] in has]
    head = ["workload"] + [c[1] for c in cols] + [c[1] for c in rcols] + ["rounds", "target", "notes"]
    lines = [header, "", "| " + " | ".join(head) + " |",
             "|---" + "|---:" * (len(cols) + len(rcols) + 1) + "|---|---|"]
    for row in rows:
        if row.get("error"):
            lines.append(f"| {row['name']} | " + " | ".join("-" for _ in cols + rcols) +
                         f" | - | | failed: {row['error']} |")
            continue
        times, ratios = row["times"], row["ratios"]
        cells = [row["name"]] + [fmt_time(times.get(k)) for k, _ in cols]
        cells += [fmt_ratio(ratios.get(k)) for k, _ in rcols]
        cells += [str(row["rounds"]), row["target_text"], row["note"]]
        lines.append("| " + " | ".join(cells) + " |")
    tgt = [r for r in rows if r.get("target_text")]
    if tgt:
        met = sum(1 for r in tgt if r["target_ok"])
        lines += ["", f"Targets met: {met} of {len(tgt)}."]
    return "\n".join(lines)


RESULTS_HEAD = """# Benchmark results

Tables written by `python -m benchmarks` (see `benchmarks/README.md`): each run replaces its own
section, between its `ember-bench` markers; everything else in this file is kept.
"""


def write_results(path: str, key: str, body: str) -> None:
    """Put ``body`` between the markers of section ``key`` in ``path`` (appended when new)."""
    begin, end = f"<!-- ember-bench begin {key} -->", f"<!-- ember-bench end {key} -->"
    text = open(path).read() if os.path.exists(path) else RESULTS_HEAD
    block = f"{begin}\n{body.strip()}\n{end}"
    i, j = text.find(begin), text.find(end)
    if i >= 0 and j > i:
        text = text[:i] + block + text[j + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _remote_impls(workers: dict, name: str, args) -> dict:
    """The workload's implementations as :class:`Remote` runners, set up (and warmed up) in
    their workers one after the other; a worker's setup failure is reported as that
    implementation's error."""
    impls: dict = {}
    sample = args.sample_ms / 1e3
    for k, wk in workers.items():
        got = wk.prepare(name, sample, 2)
        if got.get("absent"):
            continue
        if k == "ember" and got.get("note"):
            impls["note"] = got["note"]
        if "error" in got and k == "ember":
            raise RuntimeError(got["error"])
        impls[k] = wk
    return impls


# -- the run ---------------------------------------------------------------------------------

def load_workloads() -> list:
    """Import every workload module; a module that fails to import is reported and skipped."""
    import benchmarks.workloads as pkg
    failed = []
    for m in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        try:
            importlib.import_module(f"benchmarks.workloads.{m.name}")
        except Exception as e:
            failed.append((m.name, f"{type(e).__name__}: {e}"))
            print(f"workload module {m.name} failed to import: {type(e).__name__}: {e}", file=sys.stderr)
    return failed


def _selected(w, only, quick) -> bool:
    if quick and not w.quick:
        return False
    if not only:
        return True
    n = w.name.lower()
    return any(p.lower() in n or p.lower() == w.group.lower() for p in only)


def _context(backend: str, torch):
    from ember import _plugins
    _plugins.load()
    spec = _plugins.backends.get(backend)
    if spec is None:
        return None, f"no ember backend named {backend!r} (installed: {', '.join(sorted(_plugins.backends))})"
    device = spec.device_type if spec.device_type == "cpu" else f"{spec.device_type}:0"
    try:
        from ember import _devices
        _devices.canonical(device)
    except Exception as e:
        return None, f"backend {backend!r} is not usable here: {type(e).__name__}: {e}"
    tdev = "cuda" if spec.device_type == "cuda" and torch is not None and torch.cuda.is_available() else "cpu"
    return Context(backend, device, torch, tdev), None


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="cpu_numpy", help="ember backend: cpu_numpy, opencl, cuda_cupy")
    p.add_argument("--against", default=None,
                   help="also run ember on this reference backend (default: cpu_numpy for other backends)")
    p.add_argument("--only", action="append", default=[],
                   help="run workloads whose name contains this, or of this group (repeatable)")
    p.add_argument("--quick", action="store_true", help="short timing, skip slow workloads")
    p.add_argument("--budget", type=float, default=None, help="seconds of timing per workload (default 3, quick 0.3)")
    p.add_argument("--sample-ms", type=float, default=30.0, help="length of one timed sample")
    p.add_argument("--threads", type=int, default=None, help="BLAS/OpenMP/torch threads (default: leave as set)")
    p.add_argument("--no-torch", action="store_true", help="don't run PyTorch even when it is installed")
    p.add_argument("--no-write", action="store_true", help="don't write benchmarks/RESULTS.md")
    p.add_argument("--output", default=os.path.join(HERE, "RESULTS.md"))
    p.add_argument("--json", default=None, help="also write the raw samples here")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--isolate", action=argparse.BooleanOptionalAction, default=None,
                   help="time each implementation in its own worker process (default: on, except with "
                        "--threads 1)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.threads is not None:        # before numpy, torch or a backend is imported
        for v in THREAD_VARS:
            os.environ[v] = str(args.threads)
    failed_modules = load_workloads()
    if args.list:
        for w in WORKLOADS:
            print(f"{w.group:<14} {w.name}{'' if w.quick else '  (not in --quick)'}")
        return 0
    isolate = args.isolate if args.isolate is not None else args.threads != 1
    torch = None
    if not args.no_torch and not isolate:
        try:
            import torch
            torch.set_grad_enabled(True)
            if args.threads is not None:
                torch.set_num_threads(args.threads)
        except ImportError:
            torch = None
    ctx, err = _context(args.backend, torch)
    if ctx is None:
        print(err, file=sys.stderr)
        return 2
    against = args.against if args.against is not None else (None if args.backend == "cpu_numpy" else "cpu_numpy")
    ref = None
    if against and against != args.backend:
        ref, err = _context(against, None)
        if ref is None:
            print(f"--against: {err}", file=sys.stderr)
    workers = {}
    if isolate:
        opts = {"backend": args.backend, "against": against, "threads": args.threads}
        names = ["ember"] + (["ref"] if ref is not None else []) + ["numpy"]
        if not args.no_torch and importlib.util.find_spec("torch") is not None:
            names.append("torch")
        workers = {k: Remote(k, opts) for k in names}
    try:
        return _run(args, argv, ctx, ref, torch, workers, failed_modules)
    finally:
        for wk in workers.values():
            wk.close()


def _run(args, argv, ctx, ref, torch, workers, failed_modules) -> int:
    budget = args.budget if args.budget is not None else (0.3 if args.quick else 3.0)
    targets = TARGETS.get(args.backend, {})
    load0 = _load()
    rows, raw = [], {}
    for w in WORKLOADS:
        if not _selected(w, args.only, args.quick):
            continue
        row = {"name": w.name, "group": w.group}
        try:
            impls = _remote_impls(workers, w.name, args) if workers else dict(w.fn(ctx))
            if ref is not None and not workers:
                r_impl = w.fn(ref).get("ember")
                if r_impl is not None:
                    impls["ref"] = r_impl
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"
            print(f"{w.name}: setup failed: {row['error']}", file=sys.stderr)
            rows.append(row)
            continue
        note = impls.pop("note", "")
        impls = {k: impls[k] for k in IMPLS if impls.get(k) is not None}
        res = measure(impls, budget=budget, sample=args.sample_ms / 1e3, min_rounds=3 if args.quick else 5)
        for k, d in res.items():
            if "error" in d:
                print(f"  {w.name} [{k}] failed: {d['error']}", file=sys.stderr)
                note = (note + "; " if note else "") + f"{k} failed: {d['error'][:80]}"
        if "ember" not in res or "error" in res["ember"]:
            row["error"] = res.get("ember", {}).get("error", "no ember implementation")
            rows.append(row)
            continue
        times, cpu, ratios = summarize(res)
        t = targets.get(w.name)
        text, ok = _target_cell(t, ratios, times)
        row.update(times=times, cpu=cpu, ratios=ratios, note=note, target_text=text, target_ok=ok,
                   rounds=min(len(d["wall"]) for d in res.values() if "wall" in d))
        rows.append(row)
        raw[w.name] = {k: {kk: vv for kk, vv in d.items() if kk != "trace"} for k, d in res.items()}
        print(f"{w.name:<60} " + "  ".join(f"{k} {fmt_time(times.get(k)):>9}" for k in IMPLS if k in times)
              + "".join(f"  e/{k} {ratios[k]:.2f}" for k in ("ref", "numpy", "torch", "torch_cpu") if k in ratios)
              + (f"  [{text}]" if text else ""), flush=True)
    has = {k for r in rows for k in r.get("times", {})}
    threads = args.threads if args.threads is not None else os.environ.get("OMP_NUM_THREADS", "default")
    key = args.backend + (f" threads={args.threads}" if args.threads is not None else "")
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    tinfo = (workers["torch"].ask({"cmd": "info"}) if "torch" in workers
             else {"version": torch.__version__, "threads": torch.get_num_threads()} if torch is not None else None)
    tver = (f"PyTorch {tinfo['version']} ({tinfo['threads']} threads)" if tinfo and "version" in tinfo
            else "PyTorch not run")
    header = (f"## {args.backend}"
              + (f", {args.threads} thread{'s' if args.threads != 1 else ''}" if args.threads else "")
              + f"\n\n_{stamp}; `python -m benchmarks {' '.join(argv if argv is not None else sys.argv[1:])}`_\n\n"
              f"Backend `{args.backend}` (device `{ctx.device}`"
              + (f", reference `{ref.backend}`" if ref is not None else "") + f") on {machine()}; {tver}; "
              f"BLAS/OpenMP threads: {threads}; {load0} at the start, {_load()} at the end. "
              f"Times are medians over interleaved rounds; ratios are medians of per-round ratios"
              + ("; each implementation ran in its own worker process." if workers else
                 "; every implementation ran in this one process."))
    if failed_modules:
        header += "\n\nWorkload modules that failed to import: " + "; ".join(f"{m} ({e})" for m, e in failed_modules)
    body = render(rows, header, has)
    if not args.no_write:
        write_results(args.output, key, body)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"key": key, "machine": machine(), "rows": rows, "raw": raw}, f, indent=1, default=str)
    return 0
