"""A result set as typed, frozen records: what every reader of a result file works on.

A result file is pytest-benchmark's JSON with perfkit's section in ``machine_info["perfkit"]`` and each
benchmark's figures in ``extra_info`` (perfkit.resultfile.metrics holds the contract). perfkit.resultfile.load
reads, migrates and validates such a file and hands out a :class:`ResultSet`; nothing past the loader
reads the JSON's keys. Writing goes the other way through :meth:`ResultSet.to_json`, which keeps every
key perfkit does not model (pytest-benchmark's own), so the file stays one that ``pytest-benchmark
compare`` reads.
"""
from __future__ import annotations

import copy
import dataclasses
import fnmatch
import math
import statistics
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, TypeVar, cast, get_args

from perfkit.errors import BaselineError
from perfkit.resultfile import datasheet, run_positions
from perfkit.resultfile.context import Context
from perfkit.resultfile.figures import TIME
from perfkit.resultfile.fingerprint import DeviceKind, Fingerprint, device_kind, one_of
from perfkit.resultfile.metrics import (
    ABSENT_KEY,
    CONTEXT_KEYS,
    INJECTED_KEY,
    METHODS_KEY,
    METRICS_KEY,
    TOLERANCE_KEY,
    Metric,
    MetricSpec,
    tolerance_problem,
)
from perfkit.resultfile.partial import TORN
from perfkit.resultfile.payloads import DISTURBANCES, ClockLock, Disturbance, HostLoad, Record

R = TypeVar("R", bound=Record)
#: figure -> one value per run
Figures = dict[str, list[float]]


def run_count(figures: Figures) -> int:
    """How many runs one benchmark's figures hold: its time's values, else its longest figure's (a stored
    entry written without the time)."""
    return len(figures.get(TIME) or max(figures.values(), key=len, default=()))


def machine_change(before: str, after: str) -> str:
    """What makes a run of machine kind ``after`` (PerfkitInfo.machine_kind) another machine than one of kind
    ``before``; "" where it is not (the same kind, or either unknown)."""
    return f"cpu_signature {before} -> {after}" if before and after and before != after else ""


def machine_kind(device: DeviceKind | None, fingerprint: Fingerprint) -> str:
    """What tells a machine from another under its hardware id (:func:`machine_change`): a CPU run's CPU
    signature; "" where nothing does (a GPU run) or it is not known (an older file). A function of the
    fingerprint, so that ``perfkit hw`` tells this machine from a baseline's as a run does."""
    signature = fingerprint.cpu_signature
    return signature if device == "cpu" and signature else ""


def name_matches(name: str, pattern: str) -> bool:
    """Whether a benchmark's full name matches ``pattern``: * and ? are wildcards and brackets are literal,
    since every parametrized id has them (``*test_layer[conv-forward]`` names that benchmark, not a set of
    characters)."""
    return fnmatch.fnmatchcase(name, pattern.replace("[", "[[]"))


def family_of(name: str) -> str:
    """A benchmark's family: the stem of its bench file (``benches/test_layers.py::test_layer[relu]`` ->
    ``test_layers``), as the wall times, the report's sections and its plots group benchmarks."""
    return name.split("::")[0].rsplit("/", 1)[-1].removesuffix(".py")


@dataclass(frozen=True)
class Spread:
    """Between-run spread of one figure: SD of the log of run values (≈ relative SD) and (max-min)/median."""

    sd: float
    range: float
    runs: int

    @property
    def df(self) -> int:
        return self.runs - 1

    def to_json(self) -> dict[str, Any]:
        return {"sd": self.sd, "range": self.range, "runs": self.runs}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Spread:
        return cls(float(raw["sd"]), float(raw["range"]), int(raw["runs"]))


def _is_number(value: object) -> bool:
    """A finite JSON number (a bool is not one)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


#: What to do about a damaged entry, and about a damaged perfkit section (a baseline's stored runs).
_REMAKE = "re-run the benchmarks that wrote it, or restore a committed baseline from git"
_REMAKE_RUNS = ("re-run the benchmarks that wrote it, or, where it is a baseline, restore it from git or "
                "re-save it from its result files")


def _damaged(where: str, what: str, remake: str = _REMAKE) -> BaselineError:
    """The one sentence of a file damaged at ``what``."""
    return BaselineError(f"{where}: {what}; the file is damaged: {remake}")


@dataclass(frozen=True)
class BenchmarkEntry:
    """One benchmark of a run: its headline median time, declared metrics and context.

    ``raw`` is the entry as pytest-benchmark wrote it (stats, params, ``extra_info``), for family records
    read on demand and for writing the entry back.
    """

    fullname: str
    name: str
    group: str | None
    median: float
    metrics: Mapping[str, Metric]
    absent: Mapping[str, str]
    context: Context
    raw: Mapping[str, Any] = field(repr=False, compare=False)
    # the family records read so far, by kind (:meth:`record`); a dataclasses.replace copy starts empty
    _records: dict[type, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], where: str) -> BenchmarkEntry:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("fullname"), str) or \
                not isinstance(raw.get("stats"), Mapping):
            raise _damaged(where, "a benchmark entry lacks 'fullname' or 'stats'")
        name = raw["fullname"]
        median = raw["stats"].get("median")
        if not _is_number(median):
            raise _damaged(where, f"{name}: its median time is not a number")
        if median < 0:
            raise BaselineError(f"{where}: {name}: its median time is negative ({median:g} s), which no "
                                "clock measures; the file is damaged: re-run the benchmarks")
        extra = raw.get("extra_info") or {}
        if not isinstance(extra, Mapping):
            raise _damaged(where, f"{name}: its extra_info is not an object")
        metrics = extra.get(METRICS_KEY) or {}
        if not isinstance(metrics, Mapping):
            raise _damaged(where, f"{name}: extra_info.metrics is not an object")
        methods = extra.get(METHODS_KEY) or {}
        if not isinstance(methods, Mapping) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in methods.values()
        ):
            raise _damaged(where, f"{name}: extra_info.{METHODS_KEY} is not an object of method versions "
                                  "(whole numbers from 1)")
        if (problem := tolerance_problem(extra.get(TOLERANCE_KEY))) is not None:
            raise _damaged(where, f"{name}: extra_info.{TOLERANCE_KEY} {problem}")
        absent = extra.get(ABSENT_KEY) or {}
        if not isinstance(absent, Mapping):
            raise _damaged(where, f"{name}: extra_info.{ABSENT_KEY} is not an object")
        try:
            read = {n: Metric.from_json(n, m) for n, m in metrics.items()}
        except BaselineError as exc:
            raise BaselineError(f"{where}: {name}: {exc}") from None
        samples = raw["stats"].get("data")
        if samples is not None and not (isinstance(samples, list) and all(map(_is_number, samples))):
            raise _damaged(where, f"{name}: stats.data is not a list of the rounds' times")
        try:
            context = Context.from_extra(extra)
        except ValueError as exc:
            raise _damaged(where, f"{name}: {exc}") from None
        return cls(name, str(raw.get("name", name)), raw.get("group"), float(median), read,
                   {str(n): str(r) for n, r in absent.items() if n not in metrics}, context, raw)

    @property
    def family(self) -> str:
        return family_of(self.fullname)

    @property
    def extra(self) -> Mapping[str, Any]:
        return self.raw.get("extra_info") or {}

    @property
    def stats(self) -> Mapping[str, Any]:
        """pytest-benchmark's statistics of the timed rounds (median, iqr, rounds, data ...)."""
        return self.raw["stats"]

    @property
    def samples(self) -> tuple[float, ...]:
        """The raw time of every round (pytest-benchmark keeps them with --benchmark-json)."""
        return tuple(float(x) for x in self.stats.get("data") or ())

    @property
    def injected(self) -> float | None:
        """The factor a testing aid slowed this entry by (perfkit.resultfile.inject), or None."""
        value = self.extra.get(INJECTED_KEY)
        return None if value is None else float(value)

    @property
    def disturbances(self) -> tuple[Disturbance, ...]:
        """What else happened while it ran (a busy host, a hot GPU), as far as recorded and readable (where
        not, the judge does not know, as for a run without it)."""
        found: list[Disturbance] = []
        for kind in DISTURBANCES:
            try:
                record = self.record(kind)
            except BaselineError:
                continue
            if record is not None:
                found.append(record)
        return tuple(found)

    @property
    def clock_lock(self) -> str | None:
        """The SM clock it was timed at where perfkit locked it (``"base/1980 MHz locked"``), else None (an
        unreadable record reads as unlocked)."""
        try:
            record = self.record(ClockLock)
        except BaselineError:
            return None
        return None if record is None else record.sm_clock

    @property
    def rounds(self) -> int:
        return int(self.stats.get("rounds") or len(self.samples))

    @property
    def iqr(self) -> float:
        """The interquartile range of the rounds' times (seconds), as pytest-benchmark reports it."""
        return float(self.stats.get("iqr") or 0.0)

    def value(self, spec: MetricSpec | str) -> float | None:
        """A declared metric's value, or None where this benchmark did not record it."""
        metric = self.metrics.get(spec if isinstance(spec, str) else spec.name)
        return None if metric is None else metric.value

    @property
    def methods(self) -> dict[str, int]:
        """The version of the method each figure was measured by, for those measured by a version after the
        first (perfkit.resultfile.figures.METHODS): two entries of one benchmark alike here measured alike."""
        return {str(f): v for f, v in (self.extra.get(METHODS_KEY) or {}).items() if v != 1}

    def method(self, figure: str) -> int:
        """The version of the method ``figure`` was measured by (1 where none is recorded)."""
        return self.methods.get(figure, 1)

    def figures(self) -> dict[str, float]:
        """This run's value of every figure: the median time and each metric's value."""
        return {TIME: self.median, **{name: m.value for name, m in self.metrics.items()}}

    def gating_figures(self) -> set[str]:
        """The figures the verdict rests on: the gate (the time by default) and metrics declared to gate."""
        own = {self.context.gate} if self.context.gate else set()
        return own | {name for name, metric in self.metrics.items() if metric.gate}

    def record(self, kind: type[R]) -> R | None:
        """This entry's family record of ``kind``; None when it has none. A record that cannot be read raises
        BaselineError (callers that can do without it use :meth:`ResultSet.family`)."""
        raw = self.extra.get(kind.TAG)
        if raw is None:
            return None
        if kind not in self._records:  # read once: the dashboard asks an entry's records many times over
            self._records[kind] = kind.from_json(raw, f"{self.fullname}: {kind.TAG}")
        return cast(R, self._records[kind])

    def with_metrics(self, metrics: Mapping[str, Metric], absent: Mapping[str, str]) -> BenchmarkEntry:
        """This entry with ``metrics`` recorded and ``absent`` said absent (each replaces the other's
        name)."""
        now = {n: m for n, m in self.metrics.items() if n not in absent} | dict(metrics)
        gone = {n: r for n, r in self.absent.items() if n not in metrics} | dict(absent)
        return dataclasses.replace(self, metrics=now, absent=gone)

    def to_json(self) -> dict[str, Any]:
        out = copy.deepcopy(dict(self.raw))
        extra = {k: v for k, v in (out.get("extra_info") or {}).items() if k not in CONTEXT_KEYS}
        extra[METRICS_KEY] = {n: m.to_json() for n, m in self.metrics.items()}
        if self.absent:
            extra[ABSENT_KEY] = dict(self.absent)
        else:
            extra.pop(ABSENT_KEY, None)
        out["extra_info"] = extra | self.context.to_extra()
        return out


class RunOrigin(NamedTuple):
    """Where one stored run of a benchmark came from: its date and machine ("" where unknown)."""

    date: str
    machine: str

    @classmethod
    def from_json(cls, raw: Any) -> RunOrigin:
        """``[date, machine]``; a bare machine (the first files that kept origins, of 2026-11-23) has no
        date."""
        if isinstance(raw, str):
            return cls("", raw)
        date, machine = raw
        return cls(str(date), str(machine))


#: The size profiles a run is measured in: quick (a CPU box, minutes) or full (the course's sizes).
ProfileName = Literal["quick", "full"]
PROFILES: tuple[ProfileName, ...] = get_args(ProfileName)


def profile_name(name: object) -> ProfileName:
    """``name`` as a :data:`ProfileName`; a ValueError for any other."""
    return one_of(name, PROFILES, "profile")


def _machine_of(raw: Mapping[str, Any], where: str) -> tuple[str, DeviceKind | None, ProfileName]:
    """The hardware id, device and profile perfkit's section names (older files: device and profile "" or
    absent), each checked."""
    try:
        said = raw.get("device"), raw.get("profile")
        device = None if said[0] in (None, "") else device_kind(said[0])
        profile = profile_name("full" if said[1] in (None, "") else said[1])
    except ValueError as exc:
        raise _damaged(where, str(exc), _REMAKE_RUNS) from None
    hardware_id = raw.get("hardware_id", "unknown")
    if not isinstance(hardware_id, str) or not hardware_id:
        raise _damaged(where, f"its hardware id is {hardware_id!r}, not a name such as nvidia-h200-x1",
                       _REMAKE_RUNS)
    return hardware_id, device, profile


@dataclass(frozen=True)
class PerfkitInfo:
    """perfkit's section of ``machine_info``: which machine and profile, and what a baseline keeps.

    ``ceilings``: the ceilings this run measured (a file holding no ceiling benchmark keeps its run's);
    ``lent_ceilings``: those of the baseline it was judged against, for keys it did not measure;
    ``runs`` / ``noise``: a baseline's value of every figure per run and their spread
    (perfkit.resultfile.run_spread).
    """

    schema_version: int
    hardware_id: str
    device: DeviceKind | None  # None where the file does not say (written back as "")
    profile: ProfileName
    fingerprint: Fingerprint
    ceilings: Mapping[str, float] = field(default_factory=dict)
    lent_ceilings: Mapping[str, float] = field(default_factory=dict)
    runs: Mapping[str, Figures] = field(default_factory=dict)
    noise: Mapping[str, Mapping[str, Spread]] = field(default_factory=dict)
    run_dates: tuple[str, ...] = ()
    # the machine of each run (perfkit.verdict.noise's between-machine term)
    run_machines: tuple[str, ...] = ()
    # per benchmark, the date and machine of each of its stored runs in the order of its values ("" where
    # unknown): a merged or appended baseline holds entries of different runs, which the file's ``run_dates``
    # and ``run_machines`` cannot say
    run_origins: Mapping[str, tuple[RunOrigin, ...]] = field(default_factory=dict)
    # per benchmark, the runs (positions in its origins) that the values of each figure held by fewer of its
    # runs came from: a figure a later run began to record, or one a run left out
    figure_runs: Mapping[str, Mapping[str, tuple[int, ...]]] = field(default_factory=dict)
    # each family's wall time (bench file -> seconds): of the run, or in a merged baseline of the run each
    # family's entries came from
    family_wall_s: Mapping[str, float] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], where: str) -> PerfkitInfo:
        try:
            runs = {str(name): {str(fig): [float(v) for v in values] for fig, values in figures.items()}
                    for name, figures in (raw.get("runs") or {}).items()}
            noise = {str(name): {str(fig): Spread.from_json(s) for fig, s in figures.items()}
                     for name, figures in (raw.get("noise") or {}).items()}
            ceilings = {str(k): float(v) for k, v in (raw.get("ceilings") or {}).items()}
            lent = {str(k): float(v) for k, v in (raw.get("baseline_ceilings") or {}).items()}
            origins = {str(name): tuple(map(RunOrigin.from_json, runs_of))
                       for name, runs_of in (raw.get("run_origins") or {}).items()}
            walls = {str(family): float(s) for family, s in (raw.get("family_wall_s") or {}).items()}
            positions = {str(name): {str(fig): run_positions.parse(runs_of) for fig, runs_of in figs.items()}
                         for name, figs in (raw.get("figure_runs") or {}).items()}
            dates, machines = (tuple(map(str, raw.get(key) or ())) for key in ("run_dates", "run_machines"))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise BaselineError(
                f"{where}: perfkit's runs, noise, figure_runs, run dates or ceilings are malformed ({exc}); "
                f"{_REMAKE_RUNS}"
            ) from None
        if not all(
            math.isfinite(v) for figures in runs.values() for values in figures.values() for v in values
        ):
            raise BaselineError(
                f"{where}: a stored run value is not a finite number; re-save the baseline from its "
                "result files"
            )
        hardware_id, device, profile = _machine_of(raw, where)
        # positions describe stored runs: a file stripped of a benchmark's runs stands for one run of it
        positions = {name: figures for name, figures in positions.items() if name in runs}
        for name, figures in positions.items():
            for figure, at in figures.items():
                run_positions.check(name, figure, at, runs[name].get(figure), run_count(runs[name]), where)
        if any(v < 0 for figures in runs.values() for v in figures.get(TIME, ())):
            raise BaselineError(f"{where}: a stored run's time is negative, which no clock measures; re-save "
                                "the baseline from its result files")
        return cls(
            int(raw.get("schema_version", 0)),
            hardware_id,
            device,
            profile,
            Fingerprint.from_json(raw.get("fingerprint"), where),
            ceilings,
            lent,
            runs,
            noise,
            dates,
            machines,
            origins,
            positions,
            walls,
            raw,
        )

    @property
    def machine(self) -> str | None:
        """The machine the run came from (GPU UUIDs or the host), where the fingerprint records it."""
        return self.fingerprint.machine

    def machine_change(self, other: PerfkitInfo) -> str:
        """What makes ``other``, a run under this hardware id, a different machine ("" where nothing does):
        on a CPU run, another CPU signature (x86 family and model). A cloud VM often names its CPU only "AMD
        EPYC", so hosts of two generations share the model name and the id, and one ran the quick suite 2.5x
        slower than the other. A GPU run is told apart by its GPU; its host's signature is a fingerprint
        change."""
        return machine_change(self.machine_kind, other.machine_kind)

    @property
    def machine_kind(self) -> str:
        """What tells this run's machine from another under its hardware id (:meth:`machine_change`): a CPU
        run's CPU signature; "" where nothing does (a GPU run) or it is not known (an older file)."""
        return machine_kind(self.device, self.fingerprint)

    @property
    def datasheet(self) -> datasheet.GpuSpec | None:
        """The vendor's figures for this machine's GPU; None on a CPU or an unlisted GPU."""
        return datasheet.by_key(self.fingerprint.datasheet_key or "")

    def to_json(self) -> dict[str, Any]:
        out = copy.deepcopy(dict(self.raw))
        out.update(schema_version=self.schema_version, hardware_id=self.hardware_id, device=self.device or "",
                   profile=self.profile, fingerprint=self.fingerprint.to_json(), ceilings=dict(self.ceilings))
        for key, value in (
            ("baseline_ceilings", dict(self.lent_ceilings)),
            ("runs", dict(self.runs)),
            ("noise", {n: {f: s.to_json() for f, s in figs.items()} for n, figs in self.noise.items()}),
            ("run_dates", list(self.run_dates)),
            ("run_machines", list(self.run_machines)),
            ("run_origins", {n: [list(o) for o in runs_of] for n, runs_of in self.run_origins.items()}),
            ("figure_runs", {n: {f: list(at) for f, at in fs.items()} for n, fs in self.figure_runs.items()}),
            ("family_wall_s", dict(self.family_wall_s)),
        ):
            if value:
                out[key] = value
            else:
                out.pop(key, None)
        return out


@dataclass(frozen=True)
class ResultSet:
    """One run, or a baseline of several runs of one machine, as perfkit reads it.

    ``unreadable``: family records that could not be read, one line each; such an entry loses its plot and
    cross-benchmark figures, never its place in a comparison.
    """

    benchmarks: tuple[BenchmarkEntry, ...]
    info: PerfkitInfo
    datetime: str = ""
    source: str = ""
    partial: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def hardware_id(self) -> str:
        return self.info.hardware_id

    @property
    def profile(self) -> ProfileName:
        """The size profile it was measured in ("full", the course's sizes, or "quick")."""
        return self.info.profile

    @property
    def commit(self) -> str:
        return str((self.raw.get("commit_info") or {}).get("id") or "")

    def by_name(self) -> dict[str, BenchmarkEntry]:
        return {b.fullname: b for b in self.benchmarks}

    def runs(self) -> dict[str, Figures]:
        """Per benchmark, the values of each figure over every run this set stands for: a baseline built from
        several runs stores them; a plain run stands for one."""
        return {b.fullname: self._runs_of(b) for b in self.benchmarks}

    def _runs_of(self, bench: BenchmarkEntry) -> Figures:
        stored = self.info.runs.get(bench.fullname)
        if stored:
            return {fig: list(values) for fig, values in stored.items()}
        return {fig: [value] for fig, value in bench.figures().items()}

    def median(self, name: str, figure: str) -> float | None:
        """A benchmark's figure as the median over every run this set stands for (:meth:`runs`): one run's
        value where it is one run; None where no run has it."""
        bench = self.by_name().get(name)
        values = self._runs_of(bench).get(figure) if bench is not None else None
        return statistics.median(values) if values else None

    def origins(self) -> dict[str, tuple[RunOrigin, ...]]:
        """Per benchmark, the date and machine of each of its runs (:meth:`runs`' order; "" where unknown):
        stored per benchmark; for a baseline saved before that, the file's run dates and machines where the
        benchmark holds one value per date (a benchmark with another count was kept by ``--merge`` from runs
        the file no longer names; one with as many runs as the newest save cannot be told from it)."""
        runs = self.runs()
        if not self.info.runs:
            here = RunOrigin(self.datetime, self.info.machine or "")
            return {name: (here,) * run_count(f) for name, f in runs.items()}
        dates, machines = self.info.run_dates, self.info.run_machines
        if len(machines) != len(dates):
            machines = ("",) * len(dates)
        legacy = tuple(map(RunOrigin, dates, machines))
        out = {}
        for name, figures in runs.items():
            count = run_count(figures)
            stored = self.info.run_origins.get(name)
            out[name] = (
                stored if stored is not None and len(stored) == count
                else legacy if len(legacy) == count
                else (RunOrigin("", ""),) * count
            )
        return out

    def figure_positions(self, bench: BenchmarkEntry) -> dict[str, run_positions.Positions]:
        """Which of ``bench``'s runs (positions in :meth:`origins`) each figure's stored values came from
        (perfkit.resultfile.run_positions.of)."""
        figures = self._runs_of(bench)
        return run_positions.of(figures, run_count(figures), self.info.figure_runs.get(bench.fullname, {}))

    def dates(self) -> tuple[str, ...]:
        """Every known date among the runs this file holds (:meth:`origins`), oldest first: one for a single
        run, several for a baseline, however it was saved (a ``--merge`` of one run keeps the older
        entries' dates)."""
        return tuple(sorted({o.date for runs_of in self.origins().values() for o in runs_of if o.date}))

    def busy_host(self) -> str:
        """How many of its entries ran on a busy host (others kept a quarter or more of its CPUs busy,
        HostLoad.disturbed) and the most they kept busy, in words; "" where none did or none recorded it.
        Such entries are slower by the neighbour, not the code: a judge holds their slowdowns back, and a
        baseline of them would make every quiet run read faster."""
        busy = [(bench.name, load) for bench, load in self.family(HostLoad) if load.disturbed]
        if not busy:
            return ""
        most = max((load for _, load in busy), key=lambda load: load.other_cpus)
        more = f" and {len(busy) - 3} more" if len(busy) > 3 else ""
        named = ", ".join(name for name, _ in busy[:3]) + more
        which = f" ({named})" if len(busy) < len(self.benchmarks) else ""  # which ones, where not all
        return (f"{len(busy)} of its {len(self.benchmarks)} benchmarks{which} ran while other processes kept "
                f"up to {most.other_cpus:.1f} of {most.cpus} CPUs busy")

    def family(self, kind: type[R]) -> Iterator[tuple[BenchmarkEntry, R]]:
        """(entry, record) for every readable record of the family; unreadable ones are in
        :meth:`unreadable`."""
        for bench in self.benchmarks:
            try:
                record = bench.record(kind)
            except BaselineError:
                continue
            if record is not None:
                yield bench, record

    def unreadable(self, kinds: tuple[type[Record], ...]) -> list[str]:
        """One line per family record of ``kinds`` that cannot be read (its entry loses its plot)."""
        out = []
        for bench in self.benchmarks:
            for kind in kinds:
                try:
                    bench.record(kind)
                except BaselineError as exc:
                    out.append(str(exc))
        return out

    def with_benchmarks(self, benchmarks: tuple[BenchmarkEntry, ...] | list[BenchmarkEntry]) -> ResultSet:
        return dataclasses.replace(self, benchmarks=tuple(benchmarks))

    def with_info(self, **changes: Any) -> ResultSet:
        return dataclasses.replace(self, info=dataclasses.replace(self.info, **changes))

    def to_json(self) -> dict[str, Any]:
        """pytest-benchmark's JSON of this set (every key perfkit does not model kept as it was read)."""
        out = copy.deepcopy(
            {k: v for k, v in self.raw.items() if k not in ("benchmarks", "machine_info", "partial", TORN)}
        )
        machine = copy.deepcopy(dict(self.raw.get("machine_info") or {}))
        machine["perfkit"] = self.info.to_json()
        out["machine_info"] = machine
        out["benchmarks"] = [b.to_json() for b in self.benchmarks]
        out.setdefault("datetime", self.datetime)
        return out
