"""A benchmark's kernel summary in its result and in a baseline: recorded after its timed rounds, read back,
and the median of a baseline's runs.

The summary is one more call of the work the benchmark timed (perfkit.pbench.keep_work), profiled after the
timed rounds and never inside them (``--perfkit-explain``; always in a confirmation's re-runs). What it cost
is kept beside it (``kernel_summary_cost_s``), so a night can weigh it. Nothing here may fail a benchmark: a
summary that cannot be made says why (``kernel_summary_unavailable``) and the verdict goes on without it.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from perfkit.errors import BaselineError
from perfkit.explain.summary import KernelSummary, Unavailable, median_of, profile
from perfkit.resultfile.metrics import MetricRecorder
from perfkit.resultfile.model import BenchmarkEntry

UNAVAILABLE_KEY = "kernel_summary_unavailable"
COST_KEY = "kernel_summary_cost_s"
#: What a benchmark timed in another process says: its work ran in a torchrun job's ranks, not here.
ELSEWHERE = "its work was timed in another process (a torchrun job's ranks), not in this one"


def record(benchmark: Any, work: Callable[[], None] | None, device: str) -> None:
    """Profile one call of ``work`` (None: the benchmark timed nothing in this process) and keep the summary,
    or why there is none, and what it cost, in ``benchmark``'s ``extra_info``."""
    metrics = MetricRecorder(benchmark.extra_info)
    if work is None:
        metrics.info(UNAVAILABLE_KEY, ELSEWHERE)
        return
    started = time.perf_counter()
    try:
        found = profile(work, calls=1, device=device)
    except Exception as error:  # noqa: BLE001 - the timed rounds passed; one more call is not the verdict's
        said = str(error).splitlines()[0] if str(error) else type(error).__name__
        found = Unavailable(f"one more call of its work failed: {said}")
    metrics.info(COST_KEY, round(time.perf_counter() - started, 3))
    if isinstance(found, Unavailable):
        metrics.info(UNAVAILABLE_KEY, found.reason)
    else:
        metrics.payload(found)


def of(entry: BenchmarkEntry) -> KernelSummary | Unavailable:
    """``entry``'s kernel summary, or why it has none."""
    if KernelSummary.TAG in entry.extra:
        try:
            found = entry.record(KernelSummary)
        except BaselineError as error:
            return Unavailable(f"its kernel summary does not read ({error})")
        if found is not None:
            return found
    reason = entry.extra.get(UNAVAILABLE_KEY)
    return Unavailable(str(reason) if reason else "no kernel summary (run with --perfkit-explain)")


def with_median(entry: BenchmarkEntry, runs: Sequence[BenchmarkEntry]) -> BenchmarkEntry:
    """``entry`` (a baseline's newest of a benchmark) with the median kernel summary of ``runs`` (that
    benchmark in each run saved), where any of them holds one: a baseline explains a regression without the
    old code at hand."""
    summaries = [found for run in runs if isinstance(found := of(run), KernelSummary)]
    if not summaries:
        return entry
    extra = dict(entry.extra) | {KernelSummary.TAG: median_of(summaries).to_json()}
    extra.pop(UNAVAILABLE_KEY, None)
    return dataclasses.replace(entry, raw=dict(entry.raw) | {"extra_info": extra})
