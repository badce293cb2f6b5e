"""``python -m ember.distributed.run --nproc N train.py [args]``: start N processes of a script.

A thin wrapper over the ``mpiexec`` that the ``mpich`` wheel installs next to python (or the one
on PATH, or ``--mpiexec PATH`` / ``EMBER_MPIEXEC``): it runs ``mpiexec -n N python -m
ember.distributed._launch train.py [args]``, and the small ``_launch`` shim runs the script as
``__main__`` in every process and ends the whole job with the script's exit status as soon as one
rank fails (an exception or ``sys.exit(non-zero)``), so that the others never wait forever.
For several machines, call ``mpiexec`` with your cluster's host options directly.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys

from . import _mpi_env


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ember.distributed.run",
        description="Start N processes of an ember.distributed script (over MPI's mpiexec).",
        epilog="example: python -m ember.distributed.run --nproc 2 train.py --epochs 3")
    p.add_argument("--nproc", "--nproc-per-node", "--nproc_per_node", "-n", dest="nproc", type=int, default=1,
                   help="number of processes (default 1)")
    p.add_argument("--nnodes", type=int, default=1, help="only 1 is supported (use mpiexec with a host file for more)")
    p.add_argument("--mpiexec", default=None, help="the mpiexec to use (default: next to python, then PATH)")
    p.add_argument("--mpi-arg", action="append", default=[], dest="mpi_args",
                   help="an extra argument for mpiexec (repeatable), e.g. --mpi-arg=-bind-to --mpi-arg=core")
    p.add_argument("-m", dest="module", default=None, help="run a module (like python -m) instead of a script")
    p.add_argument("script", nargs="?", help="the training script; everything after it is passed to it")
    return p


_WITH_VALUE = {"--nproc", "--nproc-per-node", "--nproc_per_node", "-n", "--nnodes", "--mpiexec", "--mpi-arg"}


def _split(argv: list) -> tuple:
    """(our options, the script or ``-m module``, the script's arguments): everything after the
    script (or the module name) belongs to the script, options looking like ours included."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return argv[:i], argv[i + 1:i + 2], argv[i + 2:]
        if a == "-m":
            return argv[:i], argv[i:i + 2], argv[i + 2:]
        if a in _WITH_VALUE:
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        return argv[:i], [a], argv[i + 1:]
    return argv, [], []


def command(argv: list) -> list:
    """The ``mpiexec`` command line for ``argv`` (the arguments after ``ember.distributed.run``);
    ``SystemExit`` with a message on bad usage or a missing mpi4py/mpiexec."""
    p = _parser()
    ours, target, rest = _split(list(argv))
    ns = p.parse_args(ours + target)
    ns.args = rest
    if ns.module is None and ns.script is None:
        p.error("a script (or -m module) to run is required")
    if ns.nproc < 1:
        p.error(f"--nproc must be at least 1, got {ns.nproc}")
    if ns.nnodes != 1:
        p.error("--nnodes > 1 is not supported: run mpiexec with your cluster's host file directly, e.g. "
                "mpiexec -n 8 -f hosts python train.py")
    if not _mpi_env.mpi4py_installed():
        p.exit(2, f"ember.distributed.run: mpi4py is not installed; {_mpi_env.INSTALL_HINT}\n")
    wanted = ns.mpiexec or _mpi_env.find_mpiexec()
    mpiexec = wanted if wanted and os.path.isfile(wanted) else (shutil.which(wanted) if wanted else None)
    if not mpiexec:
        p.exit(2, f"ember.distributed.run: no mpiexec found ({wanted or 'next to python or on PATH'}); install "
                  f"one with {_mpi_env.INSTALL_HINT}, or pass --mpiexec PATH\n")
    target = ["-m", ns.module] if ns.module is not None else [ns.script]
    return [mpiexec, "-n", str(ns.nproc), *ns.mpi_args, sys.executable, "-m", "ember.distributed._launch", *target,
            *ns.args]


def main(argv: list | None = None) -> None:
    cmd = command(sys.argv[1:] if argv is None else argv)
    sys.stdout.flush()
    os.execv(cmd[0], cmd)  # mpiexec takes this process over: signals and the exit status are its


if __name__ == "__main__":
    main()
