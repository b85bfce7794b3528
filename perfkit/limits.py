"""A wall-clock limit on one benchmark, so a stuck one fails with a sentence and the run goes on.

SIGALRM interrupts the Python code of the benchmark (a CUDA kernel that never returns is
interrupted at its next Python-level step); where there is no SIGALRM (Windows) or the
benchmark runs outside the main thread, no limit applies. Distributed jobs have their own
timeout (perfkit.parallel.launch), which kills every rank.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

from perfkit.errors import PerfkitError


class BenchmarkTimeout(PerfkitError):
    """A benchmark ran past its wall-clock limit.

    An ordinary exception, so pytest-benchmark marks the unfinished timing as failed and leaves it out
    of the results, as it does for any benchmark that raised.
    """


@contextlib.contextmanager
def time_limit(seconds: float, message: str) -> Iterator[None]:
    """Run the block; if it is still running after ``seconds``, raise BenchmarkTimeout(message) in it."""
    if (
        seconds <= 0
        or not hasattr(signal, "SIGALRM")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise BenchmarkTimeout(message)

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
