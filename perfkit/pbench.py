"""The single adapter to pytest-benchmark's internals; nothing else in perfkit touches them.

pytest-benchmark (pinned to the major version in pyproject.toml) has public hooks for the JSON,
but no public way to read a fixture's round times, to take times measured in another process,
or to build the run's JSON when ``--benchmark-json`` was not given. Those three live here, each
pinned by a test, so an upgrade that changes them fails in one place.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def round_times(benchmark: Any) -> tuple[float, ...]:
    """Per-iteration seconds of each round pytest-benchmark timed; empty when benchmarks are disabled."""
    stats = getattr(benchmark, "stats", None)
    return tuple(stats.stats.data) if stats is not None else ()


def inject_samples(benchmark: Any, seconds: Sequence[float]) -> None:
    """Make times measured elsewhere (another process, a worker rank) the benchmark's own stats.

    pytest-benchmark times only code that runs in the pytest process; this feeds each sample
    through the fixture's stats as its pedantic mode does, so the JSON, ``--benchmark-compare``
    and perfkit's comparison treat them like any other timing.
    """
    if getattr(benchmark, "disabled", False) or not seconds:
        return
    benchmark._mode = "perfkit.pbench.inject_samples(...)"
    stats = benchmark._make_stats(1)
    for second in seconds:
        stats.update(float(second))
