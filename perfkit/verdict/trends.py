"""A benchmark's figure over the runs kept for its hardware, as series and as trends with their change points.

Runs in, no I/O: wherever the runs were kept (pytest-benchmark's storage folder, the history database, a
baseline's own runs), a trend is read off them the same way. A run's value is its run-level figure (median
time, or the metric's value), the unit of replication.
"""
from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from perfkit.resultfile.figures import TIME, TIME_UNIT
from perfkit.resultfile.model import ResultSet, machine_change, name_matches
from perfkit.verdict import changepoints

#: A series: one (run datetime, value) per run that holds the benchmark and figure, oldest first.
Series = list[tuple[str, float]]


def matches(name: str, pattern: str) -> bool:
    """``pattern`` is a glob of the benchmark's full name (model.name_matches); without a wildcard, a
    substring of it."""
    if not any(c in pattern for c in "*?"):
        return pattern in name
    return name_matches(name, pattern)


def series(runs: Sequence[ResultSet], benchmark_pattern: str = "*", figure: str = TIME) -> dict[str, Series]:
    """Per matching benchmark, its ``figure`` in every run that has it: (run datetime, value), oldest first.

    A value is the run-level figure (median time, or the metric's value), the unit of replication.
    """
    return {name: [(p.when, p.value) for p in points]
            for name, points in _measured(runs, benchmark_pattern, figure).items()}


class _Point(NamedTuple):
    """One run's value of a figure, with what a trend tells runs apart by: the method version it was measured
    by (perfkit.resultfile.figures), the commit, and the machine kind (PerfkitInfo.machine_kind)."""

    when: str
    value: float
    method: int
    commit: str
    machine: str


def _measured(runs: Sequence[ResultSet], benchmark_pattern: str, figure: str) -> dict[str, list[_Point]]:
    """:func:`series` with each value's method version, commit and machine kind."""
    out: dict[str, list[_Point]] = {}
    for results in runs:
        for bench in results.benchmarks:
            if not matches(bench.fullname, benchmark_pattern):
                continue
            value = bench.figures().get(figure)
            if value is not None:
                out.setdefault(bench.fullname, []).append(
                    _Point(results.datetime, value, bench.method(figure), results.commit,
                           results.info.machine_kind))
    return out


def unit_of(runs: Sequence[ResultSet], benchmark: str, figure: str = TIME) -> str:
    """The unit of ``figure`` as the newest run that has it declares it (seconds for the time)."""
    if figure == TIME:
        return TIME_UNIT
    for results in reversed(runs):
        bench = results.by_name().get(benchmark)
        if bench is not None and figure in bench.metrics:
            return bench.metrics[figure].unit
    return ""


@dataclass(frozen=True)
class Trend:
    """One benchmark's figure over the kept runs that hold it and the change points e-divisive means found in
    it; per point ``methods``: the method version (perfkit.resultfile.figures.METHODS), ``commits`` and
    ``machines``: the machine kind (PerfkitInfo.machine_kind). Where the method or the machine changes the
    trend is two series: its line breaks, no change point is sought across it, and the step is said."""

    benchmark: str
    unit: str
    points: Series
    changes: tuple[changepoints.ChangePoint, ...]
    methods: tuple[int, ...] = ()
    commits: tuple[str, ...] = ()
    machines: tuple[str, ...] = ()

    @property
    def moves(self) -> dict[int, str]:
        """The points run on another machine under the hardware id than the last point before them whose
        machine is known (a CPU of another generation: 25 times slower is no regression), and what tells the
        two apart."""
        out, last = {}, ""
        for i, kind in enumerate(self.machines):
            if change := machine_change(last, kind):
                out[i] = change
            last = kind or last
        return out

    @property
    def breaks(self) -> list[int]:
        """Where a new series begins: a point measured by another method, or on another machine, than the
        point before it."""
        return sorted({*changepoints.breaks(self.methods), *self.moves})

    def label(self, index: int) -> str:
        """Point ``index`` as every table, chart and page numbers it: the benchmark's own run number (1: the
        oldest run that holds it), its date ("undated": kept by a baseline without it) and commit."""
        date = self.points[index][0][:16].replace("T", " ") or "undated"
        commit = self.commits[index][:10] if self.commits else ""
        return f"run {index + 1} ({date}{', ' + commit if commit else ''})"

    def segments(self) -> list[tuple[int, int, float]]:
        """(first point, end, median) of each stretch between change points and new series: the shift a chart
        reads off the medians, not off single noisy runs."""
        values = [v for _, v in self.points]
        return changepoints.segment_medians(values, [*(c.index for c in self.changes), *self.breaks])

    def step(self, index: int) -> float:
        """The relative step at break ``index``: the median of the series it begins over the one before."""
        values = [v for _, v in self.points]
        bounds = [0, *self.breaks, len(values)]
        at = bounds.index(index)
        before = statistics.median(values[bounds[at - 1]:index])
        return statistics.median(values[index:bounds[at + 1]]) / before - 1 if before else float("inf")


def trends(runs: Sequence[ResultSet], benchmark_pattern: str = "*", figure: str = TIME,
           names: Collection[str] | None = None) -> list[Trend]:
    """Every matching benchmark's series with its change points, by name; ``names``: only these full names
    (which a pattern cannot say: their brackets are glob characters)."""
    found = []
    for line in lines(runs, benchmark_pattern, figure):
        if names is None or line.benchmark in names:
            changes = changepoints.change_points_apart([v for _, v in line.points], line.breaks)
            found.append(dataclasses.replace(line, changes=tuple(changes)))
    return found


def lines(runs: Sequence[ResultSet], benchmark_pattern: str = "*", figure: str = TIME) -> list[Trend]:
    """Every matching benchmark's series and what each point was measured by and on, by name, without the
    change points (:func:`trends` seeks them): what a sparkline draws."""
    return [Trend(name, unit_of(runs, name, figure), [(p.when, p.value) for p in measured], (),
                  tuple(p.method for p in measured), tuple(p.commit for p in measured),
                  tuple(p.machine for p in measured))
            for name, measured in sorted(_measured(runs, benchmark_pattern, figure).items())]
