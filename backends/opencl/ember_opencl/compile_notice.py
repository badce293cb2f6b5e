"""A line on stderr while kernels compile: the first run on a device compiles each kernel from
OpenCL C (PoCL takes 0.2-0.5 s per kernel), which sits silent for 20 s and more in a first
training epoch. Once the source builds of a burst have taken longer than ``threshold`` seconds,
one line says what is happening, how far it got and that the next run loads the cached binaries;
it repeats at most every ``interval`` seconds while the burst lasts. ``EMBER_OPENCL_QUIET=1``
silences it.
"""
from __future__ import annotations

import os
import sys
import threading
import time

__all__ = ["CompileNotice"]


class CompileNotice:
    """Counts source builds (:meth:`built`, after each) and prints the progress line on
    ``stream`` (stderr by default, looked up when printing). A pause of ``gap`` seconds
    between builds ends a burst; the next burst starts counting afresh."""

    def __init__(self, threshold: float = 2.0, interval: float = 10.0, gap: float = 5.0, stream=None,
                 clock=time.monotonic):
        self.threshold, self.interval, self.gap = threshold, interval, gap
        self.stream, self.clock = stream, clock
        self._lock = threading.Lock()
        self._count, self._seconds, self._last_build, self._last_notice = 0, 0.0, None, None

    def quiet(self) -> bool:
        return os.environ.get("EMBER_OPENCL_QUIET", "") not in ("", "0")

    def built(self, seconds: float, where: str, cache: str | None) -> None:
        """One program was compiled from source in ``seconds`` on ``where`` (a device label);
        ``cache`` is the folder its binary went to (None: the cache is off)."""
        with self._lock:
            now = self.clock()
            if self._last_build is None or now - self._last_build > self.gap:
                self._count, self._seconds, self._last_notice = 0, 0.0, None
            self._count += 1
            self._seconds += seconds
            self._last_build = now
            due = self._seconds >= self.threshold and (self._last_notice is None
                                                        or now - self._last_notice >= self.interval)
            if not due or self.quiet():
                return
            self._last_notice = now
            count, total = self._count, self._seconds
        later = (f"the binaries are cached in {cache}, so later runs skip this" if cache is not None
                 else "the cache is off (EMBER_OPENCL_CACHE=0), so every run compiles them again")
        line = (f"ember-opencl: compiling OpenCL kernels for {where} on first use: {count} compiled so far "
                f"({total:.1f} s); {later} (EMBER_OPENCL_QUIET=1 hides this)")
        print(line, file=self.stream or sys.stderr, flush=True)
