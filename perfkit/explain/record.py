"""A benchmark's kernel summary in its result and in a baseline: recorded after its timed rounds, read back,
and the median of a baseline's runs.

The summary is more calls of the work the benchmark timed (perfkit.pbench.keep_work: as many as filled one of
its rounds, perfkit.pbench.profiled_calls), profiled after the timed rounds and never inside them
(``--perfkit-explain``; a confirmation's one extra, unjudged re-run).
What it cost is kept beside it (``kernel_summary_cost_s``), so a night can weigh it. Nothing here may fail a
benchmark: a summary that cannot be made says why (``kernel_summary_unavailable``) and the verdict goes on
without it.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from perfkit.errors import BaselineError
from perfkit.explain.summary import KernelSummary, Unavailable, median_of, profile
from perfkit.resultfile.metrics import MetricRecorder
from perfkit.resultfile.model import BenchmarkEntry, ResultSet

UNAVAILABLE_KEY = "kernel_summary_unavailable"
COST_KEY = "kernel_summary_cost_s"
#: What a benchmark says that fed its samples in (perfkit.pbench.inject_samples) or timed nothing: its work
#: ran in another process (a torchrun job's ranks) or was timed by the benchmark itself, as one call of
#: nothing perfkit can repeat
ELSEWHERE = ("its samples were timed by the benchmark itself (in this process or a torchrun job's), not as a "
             "call perfkit can repeat")


def record(benchmark: Any, work: Callable[[], None] | None, device: str, calls: int = 1) -> None:
    """Profile ``calls`` calls of ``work`` (None: the benchmark timed nothing in this process) and keep the
    summary (per call), or why there is none, and what it cost, in ``benchmark``'s ``extra_info``."""
    metrics = MetricRecorder(benchmark.extra_info)
    if work is None:
        metrics.info(UNAVAILABLE_KEY, ELSEWHERE)
        return
    started = time.perf_counter()
    try:
        found = profile(work, calls=calls, device=device)
    except Exception as error:  # noqa: BLE001 - the timed rounds passed; more calls are not the verdict's
        said = str(error).splitlines()[0] if str(error) else type(error).__name__
        found = Unavailable(f"a profiled call of its work failed: {said}")
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


def with_summaries(results: ResultSet, source: ResultSet) -> ResultSet:
    """``results`` with each benchmark's kernel summary (or why it has none) taken from ``source``, a run of
    the same code made only to profile it (a confirmation judges runs without a profiler in them)."""
    made = source.by_name()
    entries = []
    for entry in results.benchmarks:
        extra = {k: v for k, v in entry.extra.items() if k not in (KernelSummary.TAG, UNAVAILABLE_KEY)}
        if entry.fullname in made:
            extra |= {k: v for k, v in made[entry.fullname].extra.items()
                      if k in (KernelSummary.TAG, UNAVAILABLE_KEY, COST_KEY)}
        entries.append(dataclasses.replace(entry, raw=dict(entry.raw) | {"extra_info": extra}))
    return results.with_benchmarks(entries)
