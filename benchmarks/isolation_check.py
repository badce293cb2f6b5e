"""Check that ``--isolate`` gives each library its own time: ``python -m benchmarks.isolation_check``.

For each model workload (MLP, LeNet, conv+BN, LSTM by default; ``--only`` to choose), times the
implementations interleaved in their worker processes (as ``python -m benchmarks`` does at default
threads), then each implementation alone (its worker, nothing else running), and prints both
medians. On a quiet machine they agree within noise; other jobs on the machine make both swing.
"""
from __future__ import annotations

import argparse
import statistics

from benchmarks import run

__all__ = ["main"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.isolation_check")
    p.add_argument("--only", action="append", default=None)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--budget", type=float, default=4.0)
    args = p.parse_args(argv)
    only = args.only or ["MLP", "LeNet", "conv+BN", "LSTM(128"]
    run.load_workloads()
    opts = {"backend": "cpu_numpy", "against": None, "threads": args.threads}
    for w in run.WORKLOADS:
        if not any(s in w.name for s in only):
            continue
        workers = {k: run.Remote(k, opts) for k in ("ember", "numpy", "torch")}
        try:
            impls = {k: wk for k, wk in workers.items()
                     if not (g := wk.prepare(w.name, 0.03, 2)).get("absent") and "error" not in g}
            res = run.measure(impls, budget=args.budget)
        finally:
            for wk in workers.values():
                wk.close()
        inter = {k: statistics.median(d["wall"]) for k, d in res.items() if d.get("wall")}
        cells = []
        for k, t in inter.items():
            wk = run.Remote(k, opts)
            try:
                wk.prepare(w.name, 0.03, 2)
                alone = statistics.median(run.measure({k: wk}, budget=args.budget)[k]["wall"])
            finally:
                wk.close()
            cells.append(f"{k}: interleaved {run.fmt_time(t)}, alone {run.fmt_time(alone)}")
        print(f"{w.name}: " + "; ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
