"""Every run kept in pytest-benchmark's own storage, read back as per-benchmark series.

``pytest benches/ --benchmark-autosave [--benchmark-storage=file://DIR]`` writes each run to
``DIR/<machine-id>/NNNN_<commit>_<date>.json`` (default ``DIR`` = ``.benchmarks``): the same JSON as
``--benchmark-json``, with perfkit's ``machine_info["perfkit"]``, but without raw samples unless
``--benchmark-save-data`` is given. A series needs only each run's median and metric values, so the default
autosave is enough for trends; a baseline keeps the raw samples of its newest run, so ``baseline save
--from-history`` needs that run saved with ``--benchmark-save-data``. pytest-benchmark's machine-id folder
names the Python, not the box, so runs are told apart by perfkit's hardware id.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import os
import statistics
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from perfkit.errors import BaselineError, UsageError
from perfkit.results import baselines, changepoints, load
from perfkit.results.figures import TIME, TIME_UNIT
from perfkit.results.model import ResultSet, machine_change
from perfkit.results.tables import fmt_change


def display_unit(values: Collection[float], unit: str) -> tuple[float, str]:
    """The scale and unit a chart shows ``values`` of ``unit`` in: seconds as s, ms, us or ns by their median,
    anything else as it is."""
    if unit != "s" or not values:
        return 1.0, unit
    middle = statistics.median(values)
    return next(((s, u) for s, u in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")) if middle >= s), (1e-9, "ns"))


def axis_scale(values: Collection[float]) -> str:
    """"log" for lines whose values span a decade or more, else "linear" (a log axis over 3.1-3.7 s labels
    its ticks 3.1x10^0)."""
    positive = [v for v in values if v > 0]
    return "log" if positive and max(positive) >= 10 * min(positive) else "linear"


#: pytest-benchmark's default ``--benchmark-storage``.
DEFAULT_STORAGE = ".benchmarks"
#: pytest-benchmark names stored runs ``NNNN_<name>.json``.
RUN_GLOB = "[0-9][0-9][0-9][0-9]_*.json"

#: A series: one (run datetime, value) per run that holds the benchmark and figure, oldest first.
Series = list[tuple[str, float]]


@dataclass(frozen=True)
class History:
    """The stored perfkit runs, oldest first, with the file of each (none where they come from a database,
    perfkit.results.store); damaged files are skipped, each with a reason.

    One damaged file (a run killed while pytest-benchmark wrote it) should not hide months of history,
    so it is reported, not raised (pytest-benchmark's own loader skips such files too).
    """

    runs: tuple[ResultSet, ...]
    paths: tuple[Path, ...] = ()
    skipped: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.runs)

    def hardware_ids(self) -> list[str]:
        return sorted({r.hardware_id for r in self.runs})

    def of_profile(self, profile: str) -> History:
        """Only the runs of one size profile: quick-profile timings do not belong in a full-profile trend."""
        keep = [r.profile == profile for r in self.runs]
        return History(tuple(r for r, k in zip(self.runs, keep) if k),
                       tuple(p for p, k in zip(self.paths, keep) if k), self.skipped)

    def profiles(self) -> list[str]:
        return sorted({r.profile for r in self.runs})


def storage_path(text: str | os.PathLike[str]) -> Path:
    """A folder from ``DIR`` or pytest-benchmark's ``file://DIR`` form (other storages cannot be read
    here)."""
    text = str(text)
    if text.startswith("file://"):
        return Path(text[len("file://"):])
    if "://" in text:
        raise UsageError(f"{text}: only file:// storage can be read; copy the runs to a folder first")
    return Path(text)


def find_storage(start: str | os.PathLike[str]) -> Path:
    """The ``.benchmarks`` of the first folder from ``start`` up that has one, stopping at the project root
    (as :meth:`perfkit.results.baselines.BaselineStore.find`); ``start/.benchmarks`` when none does."""
    start = Path(start).resolve()
    for folder in (start, *start.parents):
        if (folder / DEFAULT_STORAGE).is_dir():
            return folder / DEFAULT_STORAGE
        if any((folder / m).is_file() for m in baselines.PROJECT_MARKERS):
            break
    return start / DEFAULT_STORAGE


def _number(path: Path) -> int:
    return int(path.name[:4])


def load_history(storage: str | os.PathLike[str], hardware_id: str | None = None) -> History:
    """Every perfkit run stored under ``storage`` (of ``hardware_id`` only, when given), oldest first, each
    read
    by the one loader (perfkit.results.load: older files migrated, so a trend does not split at an upgrade).

    Order is the run's own ``datetime`` (sequence numbers restart in each machine-id folder, e.g. after a
    Python upgrade), then the sequence number. Runs written by plain pytest-benchmark are left out.
    """
    folder = storage_path(storage)
    if not folder.is_dir():
        raise BaselineError(f"{folder}: no such storage folder; run pytest with --benchmark-autosave "
                            f"(and --benchmark-storage=file://{folder}) first")
    found: list[tuple[tuple[str, int, str], ResultSet, Path]] = []
    skipped: list[str] = []
    for path in sorted({*folder.glob(RUN_GLOB), *folder.glob(f"*/{RUN_GLOB}")}):
        try:
            raw = load.read_json(path)
        except BaselineError as exc:
            skipped.append(f"{path}: unreadable ({exc})")
            continue
        if "perfkit" not in (raw.get("machine_info") or {}):
            continue  # not a perfkit run
        try:
            results = load.parse(raw, str(path))
        except BaselineError as exc:
            skipped.append(str(exc))
            continue
        if hardware_id is None or results.hardware_id == hardware_id:
            found.append(((results.datetime, _number(path), str(path.parent)), results, path))
    found.sort(key=lambda item: item[0])
    return History(tuple(r for _, r, _ in found), tuple(p for _, _, p in found), tuple(skipped))


def matches(name: str, pattern: str) -> bool:
    """``pattern`` is a glob of the benchmark's full name; without glob characters, a substring of it."""
    if not any(c in pattern for c in "*?["):
        return pattern in name
    return fnmatch.fnmatchcase(name, pattern)


def series(history: History | list[ResultSet] | tuple[ResultSet, ...], benchmark_pattern: str = "*",
           figure: str = TIME) -> dict[str, Series]:
    """Per matching benchmark, its ``figure`` in every run that has it: (run datetime, value), oldest first.

    A value is the run-level figure (median time, or the metric's value), the unit of replication.
    """
    return {name: [(p.when, p.value) for p in points]
            for name, points in _measured(history, benchmark_pattern, figure).items()}


class _Point(NamedTuple):
    """One run's value of a figure, with what a trend tells runs apart by: the method version it was measured
    by (perfkit.results.figures), the commit, and the machine kind (PerfkitInfo.machine_kind)."""

    when: str
    value: float
    method: int
    commit: str
    machine: str


def _measured(history: History | list[ResultSet] | tuple[ResultSet, ...], benchmark_pattern: str,
              figure: str) -> dict[str, list[_Point]]:
    """:func:`series` with each value's method version, commit and machine kind."""
    out: dict[str, list[_Point]] = {}
    for results in history.runs if isinstance(history, History) else history:
        for bench in results.benchmarks:
            if not matches(bench.fullname, benchmark_pattern):
                continue
            value = bench.figures().get(figure)
            if value is not None:
                out.setdefault(bench.fullname, []).append(
                    _Point(results.datetime, value, bench.method(figure), results.commit,
                           results.info.machine_kind))
    return out


def unit_of(history: History, benchmark: str, figure: str = TIME) -> str:
    """The unit of ``figure`` as the newest run that has it declares it (seconds for the time)."""
    if figure == TIME:
        return TIME_UNIT
    for results in reversed(history.runs):
        bench = results.by_name().get(benchmark)
        if bench is not None and figure in bench.metrics:
            return bench.metrics[figure].unit
    return ""


def baseline_from_history(storage: str | os.PathLike[str], hardware_id: str | None, n: int,
                          profile: str | None = None) -> ResultSet:
    """A baseline of the last ``n`` runs of one hardware id kept in pytest-benchmark's ``storage`` (see
    :func:`baseline_of`)."""
    enough_runs(n)
    kept = load_history(storage, hardware_id)
    return baseline_of(kept if profile is None else kept.of_profile(profile), str(storage_path(storage)),
                       hardware_id, n)


def enough_runs(n: int) -> None:
    """A baseline's spread needs two runs at least."""
    if n < 2:
        raise UsageError(
            f"a baseline from history needs at least 2 runs (their spread sets each figure's band), not {n}"
        )


def baseline_of(history: History, where: str, hardware_id: str | None, n: int) -> ResultSet:
    """A baseline of the last ``n`` runs of ``history`` (:func:`perfkit.results.baselines.from_runs`),
    wherever they were kept (``where`` names it: a storage folder or a database).

    Without ``hardware_id`` the runs name it; runs of several machines, or of both profiles, need it said.
    """
    enough_runs(n)
    ids = history.hardware_ids()
    if hardware_id is None and len(ids) > 1:
        raise UsageError(f"{where} holds runs of several machines ({', '.join(ids)}); "
                         "pass --hardware-id to choose one")
    if len(history.profiles()) > 1:
        raise UsageError(f"{where} holds runs of the {' and '.join(history.profiles())} profiles; a baseline "
                         "holds one profile's sizes: pass --profile to choose one")
    if len(history) < n:
        which = f" of {hardware_id or ids[0]}" if (hardware_id or ids) else ""
        raise BaselineError(
            f"{where} holds {len(history)} perfkit run(s){which}, fewer than the {n} "
            f"asked for; keep {n - len(history)} more run(s) there first (pytest --benchmark-autosave, or "
            "`perfkit history ingest` for a database)"
        )
    bare = [b.fullname for b in history.runs[-1].benchmarks if not b.samples]
    if bare:
        raise BaselineError(
            f"{history.runs[-1].source}: the newest stored run has no raw samples (e.g. {bare[0]}), which a "
            "baseline keeps; pytest-benchmark's autosave leaves them out unless --benchmark-save-data "
            "is given: run once more with it"
        )
    return baselines.from_runs(list(history.runs[-n:]))


@dataclass(frozen=True)
class Trend:
    """One benchmark's figure over the kept runs that hold it and the change points e-divisive means found in
    it; per point ``methods``: the method version (perfkit.results.figures.METHODS), ``commits`` and
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

    def turns(self) -> list[tuple[int, str]]:
        """(index, what happened there) of each change point and each new series, in order: what the history
        table and the dashboard say of the trend."""
        said = [(c.index, fmt_change(c.change)) for c in self.changes]
        said += [(i, f"measured by method {self.methods[i]} from here: a new series")
                 for i in changepoints.breaks(self.methods)]
        said += [(i, (f"on another machine from here ({change}): a new series, not a change; its median "
                      f"{fmt_change(self.step(i))}")) for i, change in self.moves.items()]
        return sorted(said)

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


def trends(history: History, benchmark_pattern: str = "*", figure: str = TIME,
           names: Collection[str] | None = None) -> list[Trend]:
    """Every matching benchmark's series with its change points, by name; ``names``: only these full names
    (which a pattern cannot say: their brackets are glob characters)."""
    found = []
    for line in lines(history, benchmark_pattern, figure):
        if names is None or line.benchmark in names:
            changes = changepoints.change_points_apart([v for _, v in line.points], line.breaks)
            found.append(dataclasses.replace(line, changes=tuple(changes)))
    return found


def lines(history: History, benchmark_pattern: str = "*", figure: str = TIME) -> list[Trend]:
    """Every matching benchmark's series and what each point was measured by and on, by name, without the
    change points (:func:`trends` seeks them): what a sparkline draws."""
    return [Trend(name, unit_of(history, name, figure), [(p.when, p.value) for p in measured], (),
                  tuple(p.method for p in measured), tuple(p.commit for p in measured),
                  tuple(p.machine for p in measured))
            for name, measured in sorted(_measured(history, benchmark_pattern, figure).items())]
