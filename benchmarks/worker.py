"""One implementation's process for ``--isolate`` runs: ``python -m benchmarks.worker IMPL OPTIONS``.

The parent (:mod:`benchmarks.run`) starts one worker per implementation (``ember``, ``ref``,
``numpy``, ``torch``) and talks to it through its stdin and stdout, one JSON object a line:

* ``{"cmd": "setup", "workload": NAME, "sample": S, "warmup": W}``: build the workload, keep this
  worker's implementation and warm it up; answers ``{"first": s, "calls": n, "note": ...}``,
  ``{"absent": true}`` (the workload has no such implementation) or ``{"error": ..., "trace": ...}``;
* ``{"cmd": "sample", "n": n}``: time ``n`` calls; answers ``{"wall": s, "cpu": s}`` per call
  (``cpu`` is this process's ``time.process_time``, so another library's threads never count);
* ``{"cmd": "info"}``: the library's version and thread count; ``{"cmd": "quit"}``.

Only the worker of ``torch`` imports PyTorch, so PyTorch's intra-op pool never runs beside ember's
or numpy's BLAS threads in one process. Separate processes are not enough on their own: a thread
pool keeps spinning after its work (OpenBLAS's for about 100 ms after a GEMM, PyTorch's OpenMP
threads for a few ms), and a pool spinning in one worker takes a core from the next worker's sample
(PyTorch's two-thread MLP step timed 6.5 ms beside ember's worker, 1.4 ms alone). So a worker
answers a sample only once its other threads have gone idle (:func:`settle`). Anything a workload
prints goes to stderr.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback

__all__ = ["main"]


def _reply(out, obj) -> None:
    out.write(json.dumps(obj) + "\n")
    out.flush()


def _pools_running(me: str) -> bool:
    """Whether a thread of this process other than ``me`` is running (state R): a library's pool
    still spinning. (Its CPU time in ``schedstat`` is not a usable signal: for a thread running on
    another core it is only brought up to date at scheduler ticks.)"""
    for tid in os.listdir("/proc/self/task"):
        if tid != me:
            try:
                with open(f"/proc/self/task/{tid}/stat") as f:
                    if f.read().rpartition(")")[2].split()[0] == "R":
                        return True
            except (OSError, IndexError):
                pass  # a thread that ended meanwhile
    return False


def settle(limit: float = 0.5) -> float:
    """Wait until no thread pool of this process is running (checked twice, 1 ms apart), at most
    ``limit`` seconds; returns the seconds waited. Without ``/proc`` (not Linux) it returns at
    once."""
    if not os.path.isdir("/proc/self/task"):
        return 0.0
    me = str(threading.get_native_id())
    t0 = time.perf_counter()
    idle = 0
    while idle < 2 and time.perf_counter() - t0 < limit:
        idle = 0 if _pools_running(me) else idle + 1
        time.sleep(0.001)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    impl, opts = argv[0], json.loads(argv[1])
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)                                   # prints from workloads go to stderr
    from benchmarks import run
    run.load_workloads()
    torch = None
    if impl == "torch":
        import torch
        torch.set_grad_enabled(True)
        if opts.get("threads") is not None:
            torch.set_num_threads(opts["threads"])
    backend = opts["against"] if impl == "ref" else opts["backend"]
    ctx, err = run._context(backend, torch)
    by_name = {w.name: w for w in run.WORKLOADS}
    fn = None
    for line in sys.stdin:
        msg = json.loads(line)
        cmd = msg["cmd"]
        if cmd == "quit":
            break
        if cmd == "info":
            _reply(out, {"version": torch.__version__, "threads": torch.get_num_threads()} if torch is not None
                   else {"error": err} if ctx is None else {})
            continue
        if cmd == "sample":
            n = msg["n"]
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(n):
                fn()
            t1, c1 = time.perf_counter(), time.process_time()
            settle()
            _reply(out, {"wall": (t1 - t0) / n, "cpu": (c1 - c0) / n})
            continue
        # setup
        fn = None
        try:
            if ctx is None:
                raise RuntimeError(err)
            impls = by_name[msg["workload"]].fn(ctx)
            fn = impls.get("ember" if impl == "ref" else impl)
            if fn is None:
                _reply(out, {"absent": True})
                continue
            first = run.warm_up(fn, msg["warmup"])
            settle()
            _reply(out, {"first": first, "calls": max(1, int(msg["sample"] / max(first, 1e-7))),
                         "note": impls.get("note", "") if impl == "ember" else ""})
        except Exception as e:
            fn = None
            _reply(out, {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
