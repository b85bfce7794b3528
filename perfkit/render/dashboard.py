"""What the dashboard shows (``perfkit dashboard``), from the runs of a history database; rendering is
perfkit.render.dashboard_html's.

Per hardware id and profile (quick sizes never share a trend with full ones), each benchmark's latest verdict
and trend; per benchmark, why its latest run moved where it was flagged (its kernels, where both sides kept
a kernel summary), its runs, the fingerprint changes between them and its speedup over the latest run
of every other hardware id. Nothing here judges, estimates noise or finds change points itself: the newest
run that holds a benchmark is judged by the one judge (perfkit.verdict.judge) with the one noise rule
(perfkit.store.kept_noise.for_judging) against a baseline of the benchmark's last :data:`BASELINE_RUNS` runs
before it, and every earlier run adds to the noise from the benchmark's last change point on, as kept runs do
for ``compare``; trends and change points are perfkit.verdict.trends', speedups perfkit.verdict.across's.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from perfkit.explain.why import Why
from perfkit.resultfile.figures import TIME
from perfkit.resultfile.model import ProfileName, ResultSet, run_count
from perfkit.store import baselines, kept_noise, storage_folder
from perfkit.verdict import across, trends
from perfkit.verdict.expected import Workloads
from perfkit.verdict.judge import Row, Verdict, fingerprint_changes, judge

#: The runs a latest run is judged against, per benchmark: a baseline is saved from three fresh runs.
BASELINE_RUNS = 3
#: Verdicts whose figure needs no chart of its own.
QUIET = (Verdict.UNCHANGED, Verdict.NEW, Verdict.MISSING)


@dataclass(frozen=True)
class RunRow:
    """One run that holds the benchmark: when, where, which code, its median time, and the fingerprint fields
    that changed since the run before it that held the benchmark."""

    when: str
    machine: str
    commit: str
    value: float
    changes: tuple[tuple[str, Any, Any], ...]


@dataclass(frozen=True)
class Latest:
    """The verdict of the newest run that holds the benchmark: the rows it rests on (its gating figures, and
    the figures that should stay put and moved), and the number of runs before it that its baseline holds
    (0: nothing to judge against). ``elsewhere``: where every earlier run that holds it was on another machine
    under the hardware id, what tells them apart (PerfkitInfo.machine_change); such runs are never its
    baseline."""

    verdict: Verdict
    rows: tuple[Row, ...]
    when: str
    against: int
    elsewhere: str = ""
    why: Why | None = None  # regressed or improved: its kernels on the two sides (perfkit.explain)

    def deciding(self) -> Row | None:
        """The row the verdict comes from: the time where it shares the verdict (the headline, charted
        already), else the first gating row that does."""
        sharing = [r for r in self.rows if r.verdict is self.verdict]
        fallback = sharing[0] if sharing else (self.rows[0] if self.rows else None)
        return next((r for r in sharing if r.figure == TIME), fallback)


@dataclass(frozen=True)
class Speedup:
    """This hardware's speedup over the latest run of ``hardware_id`` that holds the benchmark."""

    hardware_id: str
    when: str
    row: across.HardwareRow


@dataclass(frozen=True)
class Benchmark:
    """``trend``: its time; ``moved``: the figure its verdict comes from and its trend, where that is not the
    time and the verdict is not ``unchanged`` (a peak memory that regressed, a ratio that changed)."""

    name: str
    trend: trends.Trend
    runs: tuple[RunRow, ...]
    latest: Latest
    speedups: tuple[Speedup, ...]
    moved: tuple[str, trends.Trend] | None = None


@dataclass(frozen=True)
class Group:
    """The runs of one hardware id and profile."""

    hardware_id: str
    profile: ProfileName
    runs: tuple[ResultSet, ...]
    benchmarks: tuple[Benchmark, ...]

    def counts(self) -> dict[Verdict, int]:
        found: dict[Verdict, int] = defaultdict(int)
        for bench in self.benchmarks:
            found[bench.latest.verdict] += 1
        return dict(found)


@dataclass(frozen=True)
class Dashboard:
    groups: tuple[Group, ...]


def build(kept: storage_folder.History, workloads: Workloads | None = None) -> Dashboard:
    """The dashboard of every run in ``kept`` (oldest first, as the store reads them); ``workloads`` counts a
    benchmark's work for its speedups' expectations across hardware."""
    runs: dict[tuple[str, ProfileName], list[ResultSet]] = defaultdict(list)
    for results in kept.runs:
        runs[results.hardware_id, results.profile].append(results)
    newest = {key: {b.fullname: r for r in group for b in r.benchmarks} for key, group in runs.items()}
    groups = []
    for (hardware_id, profile), group in sorted(runs.items()):
        others = {other: holding for (other, p), holding in sorted(newest.items())
                  if p == profile and other != hardware_id}
        groups.append(_group(hardware_id, profile, group, others, workloads))
    return Dashboard(tuple(groups))


def _group(hardware_id: str, profile: ProfileName, runs: Sequence[ResultSet],
           others: dict[str, dict[str, ResultSet]], workloads: Workloads | None) -> Group:
    latest = _latest_verdicts(runs)
    entries = [r.by_name() for r in runs]
    figures: dict[str, dict[str, trends.Trend]] = {}  # each figure's trends, found once per figure needed
    benchmarks = []
    for trend in trends.trends(runs):
        name = trend.benchmark
        holding = [(r, entries[i][name]) for i, r in enumerate(runs) if name in entries[i]]
        rows = [RunRow(r.datetime, r.info.machine or "", r.commit, entry.median,
                       fingerprint_changes(before[0], r) if before is not None else ())
                for before, (r, entry) in zip([None, *holding], holding)]
        mine = holding[-1][0]
        speedups = tuple(Speedup(other, theirs.datetime,
                                 across.hardware_rows(theirs, mine, [name], workloads)[0])
                         for other, newest in others.items() if (theirs := newest.get(name)) is not None)
        deciding = latest[name].deciding()
        moved = None
        if deciding is not None and deciding.figure != TIME and latest[name].verdict not in QUIET:
            figure = deciding.figure
            if figure not in figures:
                figures[figure] = {t.benchmark: t for t in trends.trends(runs, figure=figure)}
            moved = (figure, figures[figure][name]) if name in figures[figure] else None
        benchmarks.append(Benchmark(name, trend, tuple(rows), latest[name], speedups, moved))
    return Group(hardware_id, profile, tuple(runs), tuple(benchmarks))


def _latest_verdicts(runs: Sequence[ResultSet]) -> dict[str, Latest]:
    """Each benchmark's verdict in the newest run that holds it: that run judged whole (its benchmarks share
    the correction for multiple figures, as at the end of a run) against the runs before it on the same
    machine. Runs of another machine under the id (a CPU of another generation) are neither its baseline nor
    its noise, as ``compare`` never judges across them: a benchmark only they hold is not judged."""
    newest_at = {b.fullname: i for i, r in enumerate(runs) for b in r.benchmarks}
    out: dict[str, Latest] = {}
    for at in sorted(set(newest_at.values())):
        current = runs[at]
        before = [r for r in runs[:at] if not r.info.machine_change(current.info)]
        elsewhere = {b.fullname: change for r in runs[:at] if (change := r.info.machine_change(current.info))
                     for b in r.benchmarks}
        baseline = _baseline(before, current)
        if baseline is None:
            comparison, counted = None, {}
        else:
            comparison = judge(baseline, current, kept_noise.for_judging(baseline, current, earlier=before))
            counted = baseline.runs()
        verdicts = comparison.benchmark_verdicts() if comparison is not None else {}
        whys = {w.benchmark: w for w in comparison.why} if comparison is not None else {}
        for name in (n for n, i in newest_at.items() if i == at):
            against = run_count(counted.get(name, {}))
            if not against and name in elsewhere:
                out[name] = Latest(Verdict.NOT_JUDGED, (), current.datetime, 0, elsewhere[name])
                continue
            rows = tuple(r for r in comparison.rows if r.benchmark == name
                         and (r.gating or r.verdict is Verdict.CHANGED)) if comparison is not None else ()
            out[name] = Latest(verdicts.get(name, Verdict.NEW), rows, current.datetime, against,
                               why=whys.get(name))
    return out


def _baseline(before: Sequence[ResultSet], current: ResultSet) -> ResultSet | None:
    """A baseline of each of ``current``'s benchmarks' last :data:`BASELINE_RUNS` runs in ``before`` (runs
    may hold different selections of benchmarks) that measured it as ``current`` did (every figure by the
    same method version), else its last runs whatever their method (the judge then says it was measured
    differently); None where no earlier run holds any of them."""
    chosen: dict[int, set[str]] = defaultdict(set)
    held = [r.by_name() for r in before]
    for bench in current.benchmarks:
        holders = [i for i, entries in enumerate(held) if bench.fullname in entries]
        alike = [i for i in holders if held[i][bench.fullname].methods == bench.methods]
        for i in (alike or holders)[-BASELINE_RUNS:]:
            chosen[i].add(bench.fullname)
    if not chosen:
        return None
    return baselines.from_runs([before[i].with_benchmarks([b for b in before[i].benchmarks
                                                           if b.fullname in chosen[i]])
                                for i in sorted(chosen)])
