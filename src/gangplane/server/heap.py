"""Hand the C heap's free pages back to the OS after the process has grown (glibc's ``malloc_trim``).

A control plane that has taken a burst of writes keeps, besides its live objects, pages glibc's allocator
freed but still holds: Python objects over 512 bytes, dict tables, request buffers and JSON texts come from
``malloc``, and glibc returns only the top of its main heap by itself, never free pages between live blocks
nor those of the other threads' arenas. ``malloc_trim(0)`` releases every whole free page (``madvise``).
Measured after 1,000 TrainJobs (docs/control-plane.md, "Performance"): it returned 4 MiB of 149 MiB RSS, and
costs 6-10 ms of CPU on a heap that size, so it runs only when the process grew since the last trim: an idle
process is never trimmed again, a busy one at most once per ``TRIM_INTERVAL``.

Only for a process's entry point (the API server, the embedded cluster), like ``gc.freeze``; elsewhere than
glibc (``malloc_trim`` absent) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from collections.abc import Callable

TRIM_INTERVAL = 5.0  # seconds between looks at the process's size
GROWTH = 1 << 20  # bytes the resident set must have grown since the last trim for another one
_PAGE = os.sysconf("SC_PAGE_SIZE")


def should_trim(resident: int, after_last_trim: int, growth: int = GROWTH) -> bool:
    """Trim once the resident set has grown by ``growth`` since the last trim left it at ``after_last_trim``."""
    return resident - after_last_trim >= growth


def resident_bytes() -> int:
    """This process's resident set (``/proc/self/statm``: one read, no walk)."""
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[1]) * _PAGE


def _malloc_trim() -> Callable[[], object] | None:
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    trim = getattr(libc, "malloc_trim", None)
    return None if trim is None else lambda: trim(0)


class HeapTrimmer:
    """Looks every ``interval`` seconds; trims when ``should_trim`` says so (``trim`` and ``resident`` are
    injected for tests)."""

    def __init__(
        self,
        trim: Callable[[], object] | None,
        resident: Callable[[], int] = resident_bytes,
        interval: float = TRIM_INTERVAL,
    ) -> None:
        self._trim, self._resident, self._interval = trim, resident, interval
        self._after_last = resident()
        self._stopped = threading.Event()

    def step(self) -> bool:
        """One look; whether it trimmed."""
        if self._trim is None or not should_trim(self._resident(), self._after_last):
            return False
        self._trim()
        self._after_last = self._resident()
        return True

    def start(self) -> None:
        if self._trim is not None:
            threading.Thread(target=self._run, name="heap-trim", daemon=True).start()

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            self.step()


def start_heap_trimmer() -> HeapTrimmer:
    """Trim this process's heap as it grows, for as long as it runs."""
    trimmer = HeapTrimmer(_malloc_trim())
    trimmer.start()
    return trimmer


__all__ = ["GROWTH", "TRIM_INTERVAL", "HeapTrimmer", "resident_bytes", "should_trim", "start_heap_trimmer"]
