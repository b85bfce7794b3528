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
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from perfkit.errors import BaselineError, UsageError
from perfkit.results import baselines, changepoints, load
from perfkit.results.figures import TIME, TIME_UNIT
from perfkit.results.model import ResultSet

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
    return {name: [(when, value) for when, value, _ in points]
            for name, points in _measured(history, benchmark_pattern, figure).items()}


def _measured(history: History | list[ResultSet] | tuple[ResultSet, ...], benchmark_pattern: str,
              figure: str) -> dict[str, list[tuple[str, float, int]]]:
    """:func:`series` with the method version each value was measured by (perfkit.results.figures)."""
    out: dict[str, list[tuple[str, float, int]]] = {}
    for results in history.runs if isinstance(history, History) else history:
        for bench in results.benchmarks:
            if not matches(bench.fullname, benchmark_pattern):
                continue
            value = bench.figures().get(figure)
            if value is not None:
                out.setdefault(bench.fullname, []).append((results.datetime, value, bench.method(figure)))
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
    """One benchmark's figure over the kept runs and the change points e-divisive means found in it;
    ``methods``: the method version of each point (perfkit.results.figures.METHODS). Where it changes the
    trend is two series: its line breaks and no change point is sought across it."""

    benchmark: str
    unit: str
    points: Series
    changes: tuple[changepoints.ChangePoint, ...]
    methods: tuple[int, ...] = ()

    @property
    def breaks(self) -> list[int]:
        """The points measured by another method than the point before them."""
        return changepoints.breaks(self.methods)


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
    """Every matching benchmark's series and the method of each point, by name, without the change points
    (:func:`trends` seeks them): what a sparkline draws."""
    return [Trend(name, unit_of(history, name, figure), [(w, v) for w, v, _ in measured], (),
                  tuple(m for _, _, m in measured))
            for name, measured in sorted(_measured(history, benchmark_pattern, figure).items())]


def run_label(history: History, when: str) -> str:
    """Run number among the kept runs, date and commit: what a reader looks up next."""
    for number, results in enumerate(history.runs, 1):
        if results.datetime == when:
            commit = results.commit[:10]
            return f"run {number} ({when[:16].replace('T', ' ')}{', ' + commit if commit else ''})"
    return f"run ({when[:16]})"
