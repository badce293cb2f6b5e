"""Runs one rank of a job started by ``ember.distributed.run``: the script (or ``-m module``)
as ``__main__``; an uncaught exception or ``sys.exit(non-zero)`` ends every rank of the job."""
from __future__ import annotations

import os
import runpy
import sys
import traceback

from . import _faults, _mpi_env


def _fail(code: int, reason: str) -> None:
    size, _ = _mpi_env.launcher_world_size()
    if size is not None and size > 1 and _faults._enabled():
        _faults.abort(code, reason)
    sys.exit(code)


def main(argv: list) -> None:
    if not argv:
        sys.exit("usage: python -m ember.distributed._launch script.py [args]  (use ember.distributed.run)")
    try:
        if argv[0] == "-m":
            sys.argv = argv[1:]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code in (None, 0):
            raise
        if not isinstance(code, int):
            sys.stderr.write(f"{code}\n")
            code = 1
        _fail(code, f"the script exited with status {code}")
    except BaseException as e:  # KeyboardInterrupt included: the whole job stops
        tb = e.__traceback__
        while tb is not None and (tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__)
                                  or "runpy" in tb.tb_frame.f_code.co_filename):
            tb = tb.tb_next  # show the script's frames, not this shim's
        traceback.print_exception(type(e), e, tb)
        _fail(1, f"uncaught {type(e).__name__}")


if __name__ == "__main__":
    main(sys.argv[1:])
