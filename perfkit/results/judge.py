"""The one judge: two result sets in, a verdict per figure and per benchmark out; no I/O, no printing.

The end-of-run summary, ``perfkit compare`` and ``perfkit report`` all call :func:`judge` with result sets
read by the one loader (perfkit.results.load) and the noise of one rule (perfkit.results.noise), so the same
pair of files gets the same verdicts from each.

The run is the unit of replication (perfkit.results.runs). For each gating figure perfkit takes every
run's value on each side and the between-run spread ``s`` (the SD of log run values, pooled over the
sides that have several runs, else the spread stored with the hardware's baseline). A figure

- is **unchanged** when it moved less than its band, ``max(threshold, k·s)``: the minimum effect
  worth a verdict (5% by default, the benchmark's own tolerance where it declares one) or ``k`` (3)
  times the spread, whichever is larger;
- **regressed** / **improved** beyond the band *and* when a t-test on the log run values is
  significant after Holm's correction for the number of gating figures compared (family-wise
  false-alarm rate ``alpha``, 5%);
- **unknown** beyond the band but without that evidence (too few runs, or not significant):
  more runs decide it (``--perfkit-confirm``), as Chromium's Pinpoint and nvbench answer
  "ambiguous" rather than guess;
- **not gated** when its runs spread by more than ``unstable`` (max-min over median, 10%), the
  TorchBench stability check: reported with its change, never a failure.

A figure that got worse while other processes kept a quarter or more of the run's CPUs busy
(the host load the plugin records) is **unknown**, whatever its p-value: on a shared 2-vCPU runner a
neighbour alone makes a two-thread benchmark 60-70% slower.

Only gating figures get those verdicts: a benchmark gates on its time unless it names another figure
(or none), plus metrics declared to gate (allocator peaks). Figures derived from the time (bandwidth, %
of peak, speedups, energy) follow it and are shown as ``info``; counts that should not change (FLOPs,
parameters) as ``changed`` when they move at all, ratios that should stay put when they move beyond the
band a gating figure gets, unless their baseline runs already spread by more than ``unstable`` (then
``info``: too noisy to judge). Each gating figure carries its minimum detectable effect (MDE): the
smallest change this policy and these runs would call significant.
"""
from __future__ import annotations

import dataclasses
import enum
import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from perfkit.results import across, stats
from perfkit.results.figures import TIME, TIME_UNIT
from perfkit.results.model import ResultSet
from perfkit.results.noise import Noise
from perfkit.results.pairing import FigureRuns, pair
from perfkit.results.runs import spread_of


class Verdict(enum.Enum):
    """A figure's verdict; a benchmark takes the worst of its gating figures' (:data:`WORST_FIRST`)."""

    REGRESSED = "regressed"
    UNKNOWN = "unknown"
    IMPROVED = "improved"
    NOT_GATED = "not gated"
    UNCHANGED = "unchanged"
    NEW = "new"
    MISSING = "missing"
    CHANGED = "changed"  # a count, or a ratio that should stay put, moved (not a gating figure)
    INFO = "info"  # a figure shown, not judged

    def __str__(self) -> str:
        return self.value


#: The verdicts a benchmark can get, worst first.
WORST_FIRST: tuple[Verdict, ...] = (Verdict.REGRESSED, Verdict.UNKNOWN, Verdict.IMPROVED, Verdict.NOT_GATED,
                                    Verdict.UNCHANGED, Verdict.NEW, Verdict.MISSING)
#: Fingerprint fields whose change is shown beside the verdicts.
FINGERPRINT_FIELDS: tuple[str, ...] = (
    "gpu_name", "gpu_count", "driver", "cuda", "cudnn", "torch", "torchvision", "numba", "numba_cuda",
    "python", "cpu_model", "cpu_signature", "memory_cap_gib",
)


@dataclass(frozen=True)
class Policy:
    threshold: float = 0.05  # minimum effect: smaller changes are never a verdict
    k: float = 3.0  # the band is max(threshold, k × between-run spread)
    alpha: float = 0.05  # family-wise false-alarm rate over the gating figures compared (Holm)
    unstable: float = 0.10  # between-run (max-min)/median above which a figure is reported, not gated


@dataclass(frozen=True)
class Row:
    benchmark: str
    figure: str
    unit: str
    better: str
    baseline: float | None
    current: float | None
    change: float | None
    verdict: Verdict
    p_value: float | None = None
    note: str = ""
    gating: bool = False
    mde: float | None = None  # relative; None where no run-level spread is known
    runs: tuple[int, int] = (1, 1)

    @property
    def worse(self) -> bool:
        """It moved the way that is worse for it."""
        return self.change is not None and self.change != 0 and (self.change > 0) == (self.better == "lower")


@dataclass(frozen=True)
class Comparison:
    baseline_id: str
    current_id: str
    rows: tuple[Row, ...]
    fingerprint_changes: tuple[tuple[str, Any, Any], ...] = ()
    geomean_time_ratio: float | None = None
    hardware_rows: tuple[across.HardwareRow, ...] = field(default=())
    alpha: float = Policy.alpha

    @property
    def same_hardware(self) -> bool:
        return self.baseline_id == self.current_id

    @property
    def regressions(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.verdict is Verdict.REGRESSED)

    def benchmark_verdicts(self) -> dict[str, Verdict]:
        """One verdict per benchmark: the worst of its gating figures (``unchanged`` if it has none)."""
        out: dict[str, Verdict] = {}
        for row in self.rows:
            if row.gating:
                now = out.get(row.benchmark)
                out[row.benchmark] = (
                    row.verdict if now is None else min(now, row.verdict, key=WORST_FIRST.index)
                )
            else:
                out.setdefault(row.benchmark, Verdict.UNCHANGED)
        return out

    def counts(self) -> dict[Verdict, int]:
        verdicts = list(self.benchmark_verdicts().values())
        return {v: n for v in WORST_FIRST if (n := verdicts.count(v))}

    def weak(self, limit: float = 0.10) -> tuple[Row, ...]:
        """Gating figures whose minimum detectable effect exceeds ``limit`` (or is unknown)."""
        return tuple(r for r in self.rows if r.gating
                     and r.verdict not in (Verdict.NOT_GATED, Verdict.NEW, Verdict.MISSING)
                     and (r.mde is None or r.mde > limit))

    def to_json(self) -> dict[str, Any]:
        """The comparison as plain JSON (``perfkit compare --format json``)."""
        rows = [{**dataclasses.asdict(r), "verdict": r.verdict.value} for r in self.rows]
        return {
            "baseline_id": self.baseline_id,
            "current_id": self.current_id,
            "same_hardware": self.same_hardware,
            "counts": {v.value: n for v, n in self.counts().items()},
            "benchmarks": {n: v.value for n, v in self.benchmark_verdicts().items()},
            "rows": rows,
            "fingerprint_changes": [list(c) for c in self.fingerprint_changes],
            "geomean_time_ratio": self.geomean_time_ratio,
            "hardware_rows": [dataclasses.asdict(h) | {"far": h.far} for h in self.hardware_rows],
            "alpha": self.alpha,
        }


def judge(baseline: ResultSet, current: ResultSet, noise: Noise, policy: Policy = Policy()) -> Comparison:
    """Judge every benchmark of ``current`` against ``baseline``, run by run; ``noise`` stands in where
    neither side holds several runs (perfkit.results.noise)."""
    paired = pair(baseline, current, noise)
    rows = [_absent_row(b.fullname, b.median, Verdict.MISSING) for b in paired.only_baseline]
    rows += [_absent_row(b.fullname, b.median, Verdict.NEW) for b in paired.only_current]
    judged = [_judge_figure(f, policy) for f in paired.figures]
    rows += _corrected(judged, policy)
    rows.sort(key=lambda r: (r.benchmark, not r.gating, r.figure))
    if baseline.hardware_id == current.hardware_id:
        hardware_rows: tuple[across.HardwareRow, ...] = ()
        base_runs, cur_runs = baseline.runs(), current.runs()
        geomean = stats.geometric_mean(
            [
                statistics.fmean(cur_runs[n][TIME]) / statistics.fmean(base_runs[n][TIME])
                for n in paired.common
                if statistics.fmean(base_runs[n][TIME]) > 0
            ]
        )
    else:
        hardware_rows = across.hardware_rows(baseline, current, paired.common)
        geomean = across.geomean_time_ratio(hardware_rows)
    return Comparison(
        baseline.hardware_id,
        current.hardware_id,
        tuple(rows),
        _fingerprint_changes(baseline, current),
        geomean,
        hardware_rows,
        policy.alpha,
    )


def _absent_row(name: str, median: float, verdict: Verdict) -> Row:
    missing = verdict is Verdict.MISSING
    return Row(
        benchmark=name,
        figure=TIME,
        unit=TIME_UNIT,
        better="lower",
        baseline=median if missing else None,
        current=None if missing else median,
        change=None,
        verdict=verdict,
        gating=True,
    )


@dataclass(frozen=True)
class _Judged:
    """A row before Holm's correction: gating rows beyond their band carry a p-value to correct."""

    row: Row
    p_value: float | None = None
    evidence: tuple[int, float | None, float] | None = (
        None  # (df, se, band) for the MDE at the corrected level
    )


def _judge_figure(fig: FigureRuns, policy: Policy) -> _Judged:
    threshold = fig.tolerance if fig.tolerance is not None else policy.threshold
    b, c = fig.baseline, fig.current
    if not b or not c:
        verdict = Verdict.UNKNOWN if fig.judged else (Verdict.NEW if not b else Verdict.MISSING)
        note = f"a gating figure only {'this run' if not b else 'the baseline'} has" if fig.judged else ""
        return _Judged(_row(fig, verdict, note=note, gating=fig.judged))
    if fig.judged:
        return _gate(fig, threshold, policy)
    return _Judged(_informational(fig, threshold, policy))


def _row(fig: FigureRuns, verdict: Verdict, note: str = "", gating: bool = False) -> Row:
    base, cur = fig.base_mean, fig.cur_mean
    change = stats.relative_change(base, cur) if base is not None and cur is not None else None
    return Row(benchmark=fig.benchmark, figure=fig.figure, unit=fig.unit, better=fig.better, baseline=base,
               current=cur, change=change, verdict=verdict, note=note, gating=gating,
               runs=(len(fig.baseline), len(fig.current)))


def _spread(fig: FigureRuns) -> tuple[float | None, int]:
    """Between-run SD of the log values pooled over the sides with several runs, else the stored spread."""
    sd, df = stats.pooled_sd([fig.baseline, fig.current])
    if df:
        return sd, df
    if fig.stored is not None and fig.stored.df > 0:
        return fig.stored.sd, fig.stored.df
    return None, 0


def _ranges(fig: FigureRuns, *sides: tuple[float, ...]) -> list[float]:
    return [s.range for s in (*(spread_of(side) for side in sides), fig.stored) if s is not None]


def _informational(fig: FigureRuns, threshold: float, policy: Policy) -> Row:
    if fig.better != "none":
        return _row(fig, Verdict.INFO)
    base, cur = fig.base_mean or 0.0, fig.cur_mean or 0.0
    counts = base.is_integer() and cur.is_integer()
    moved = abs(stats.relative_change(base, cur)) > (0.0 if counts else threshold)
    ranges = _ranges(fig, fig.baseline)
    if moved and not counts and ranges and max(ranges) > policy.unstable:
        # the gating rule for noisy figures: a ratio whose baseline runs already spread this much says nothing
        return _row(fig, Verdict.INFO, f"runs spread {max(ranges):.0%} (max-min) > {policy.unstable:.0%}: "
                                       "too noisy to judge")
    moved = moved and (counts or _beyond_band(fig, threshold, policy))
    note = ("a count that should not change" if counts else "a figure that should stay put") if moved else ""
    return _row(fig, Verdict.CHANGED if moved else Verdict.INFO, note)


def _beyond_band(fig: FigureRuns, threshold: float, policy: Policy) -> bool:
    """A ratio moved by more than the band a gating figure gets: a utilisation that wanders 3% between runs
    must not be called changed at +5.3%."""
    base, cur = fig.base_mean or 0.0, fig.cur_mean or 0.0
    if min(base, cur) <= 0:
        return abs(stats.relative_change(base, cur)) > threshold
    return abs(math.log(cur / base)) > stats.band(_spread(fig)[0], threshold, policy.k)


def _gate(fig: FigureRuns, threshold: float, policy: Policy) -> _Judged:
    b, c = fig.baseline, fig.current
    sd, df = _spread(fig)
    ranges = _ranges(fig, b, c)
    if ranges and max(ranges) > policy.unstable:
        return _Judged(
            _row(
                fig,
                Verdict.NOT_GATED,
                f"runs spread {max(ranges):.0%} (max-min) > "
                f"{policy.unstable:.0%}: too noisy to gate; reported only",
                True,
            )
        )
    if min(b + c) <= 0:
        same = fig.base_mean == fig.cur_mean
        return _Judged(_row(fig, Verdict.UNCHANGED if same else Verdict.UNKNOWN,
                            "a zero or negative figure: no log scale", True))
    shift = stats.log_shift(b, c)
    band = stats.band(sd, threshold, policy.k)
    se = stats.standard_error(sd, len(b), len(c)) if sd is not None else None
    evidence = (df, se, band)
    worse = shift if fig.better == "lower" else -shift
    if abs(shift) <= band:
        return _Judged(_row(fig, Verdict.UNCHANGED, gating=True), evidence=evidence)
    if se is None or df < 1:
        return _Judged(
            _row(
                fig, Verdict.UNKNOWN, "needs more runs: no between-run spread is known for this figure", True
            ),
            evidence=evidence,
        )
    if worse > 0 and fig.host_load is not None and fig.host_load.busy:
        return _Judged(_row(fig, Verdict.UNKNOWN, fig.host_load.sentence(), True), evidence=evidence)
    p_value = 0.0 if se == 0 else stats.two_sided_p(shift / se, df)
    return _Judged(
        _row(fig, Verdict.REGRESSED if worse > 0 else Verdict.IMPROVED, gating=True), p_value, evidence
    )


def _corrected(judged: list[_Judged], policy: Policy) -> list[Row]:
    """Holm's step-down correction over every gating figure compared; then each gating row's MDE."""
    tests = sum(1 for j in judged if j.row.gating and j.row.verdict is not Verdict.NOT_GATED)
    tested = [j for j in judged if j.p_value is not None]
    significant = dict(
        zip(map(id, tested), stats.holm([j.p_value or 0.0 for j in tested], policy.alpha, tests))
    )
    rows = []
    for j in judged:
        row = j.row
        if j.evidence is not None:
            df, se, band = j.evidence
            mde = (
                None if se is None or df < 1 else stats.minimum_detectable(band, se, df, policy.alpha, tests)
            )
            row = dataclasses.replace(row, mde=mde)
        if j.p_value is not None:
            if significant[id(j)]:
                row = dataclasses.replace(row, p_value=j.p_value)
            else:
                row = dataclasses.replace(
                    row,
                    verdict=Verdict.UNKNOWN,
                    p_value=j.p_value,
                    note=f"beyond the band but not significant after correcting for {tests} "
                    f"figures (p={j.p_value:.2g}); more runs decide",
                )
        rows.append(row)
    return rows


def _fingerprint_changes(baseline: ResultSet, current: ResultSet) -> tuple[tuple[str, Any, Any], ...]:
    old, new = baseline.info.fingerprint, current.info.fingerprint
    # a field only one side recorded (added to the fingerprint after the older run) is not a change
    return tuple(
        (f, old[f], new[f]) for f in FINGERPRINT_FIELDS if f in old and f in new and old[f] != new[f]
    )
