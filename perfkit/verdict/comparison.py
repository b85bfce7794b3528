"""What the judge gives: each figure's :class:`Verdict` in a :class:`Row`, the :class:`Comparison` of two
result sets those rows make, and what it was judged by (:class:`Policy`, a confirmation's :class:`FirstLook`).

The types alone, no judging: perfkit.verdict.judge makes them; the end-of-run summary, ``perfkit compare``,
``perfkit report``, the dashboard and the A/B read them.
"""
from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from perfkit.explain.why import Why
from perfkit.verdict import across

if TYPE_CHECKING:  # the comparison carries the run's host shift; the shift is found by the judge's rule
    from perfkit.verdict.host_shift import HostShift


class Verdict(enum.Enum):
    """A figure's verdict; a benchmark takes the worst of its gating figures' (:data:`WORST_FIRST`)."""

    REGRESSED = "regressed"
    FAR = across.FAR_FROM  # across hardware: beyond x1.25 of the expected speedup
    SLOWER = across.SLOWER  # across hardware: slower than expected, or than the baseline's machine
    UNKNOWN = "unknown"
    # a figure the policy cannot judge (too few baseline runs): counted, never shown as unchanged
    NOT_JUDGED = "not judged"
    # the two sides measured the figure differently (another method version, another locked clock): shown
    # side by side, never judged
    MEASURED_DIFFERENTLY = "measured differently"
    IMPROVED = "improved"
    FASTER = across.FASTER
    CHANGED = "changed"  # a count, or a ratio that should stay put, moved (not a gating figure)
    AS_EXPECTED = across.AS_EXPECTED  # across hardware: within x1.15 of the expected speedup
    UNCHANGED = "unchanged"
    NEW = "new"
    MISSING = "missing"
    INFO = "info"  # a figure shown, not judged (across hardware, a gating one that differs there too)

    def __str__(self) -> str:
        return self.value


#: The verdicts a benchmark can get, worst first.
WORST_FIRST: tuple[Verdict, ...] = (
    Verdict.REGRESSED, Verdict.FAR, Verdict.SLOWER, Verdict.UNKNOWN, Verdict.IMPROVED, Verdict.FASTER,
    Verdict.CHANGED, Verdict.NOT_JUDGED, Verdict.MEASURED_DIFFERENTLY, Verdict.AS_EXPECTED,
    Verdict.INFO,  # across hardware: a gating figure other than a time that differs on the other machine
    Verdict.UNCHANGED, Verdict.NEW, Verdict.MISSING,
)
#: The note of a gating figure other than a time that moved across hardware (shown, not judged).
DIFFERS = "differs on the other machine: shown, not judged"
#: The note of a gating figure that only one of two machines measured (shown, not judged).
ONE_MACHINE = "measured on one machine only: shown, not judged"
#: The note of a gating figure that moved across hardware less than its noise lets a test call (more runs of
#: either side would not make it a verdict on the code).
NOT_APART = "on another machine, not significantly apart: shown, not judged"
#: The note of a count that moved (a ratio that moved says otherwise).
COUNT_MOVED = "a count that should not change"
#: A gating figure whose MDE exceeds this cannot see a 10% slowdown: a weak figure, listed apart.
WEAK_MDE = 0.10
#: The runs of this code a weak figure's advice sends a night to at most (``--perfkit-confirm N``):
#: needing more, it needs a less noisy measurement.
FEW_RUNS = 10


#: The MDE a GPU-bound figure should reach in one run (issue 44): 3%, or 1.5 times a wider minimum effect.
SHARP_GPU_MDE = 0.03


def sharp_goal(minimum: float, least: float = WEAK_MDE) -> float:
    """The MDE a figure should reach: ``least`` (10% for a weak figure, :data:`SHARP_GPU_MDE` for a GPU-bound
    one), or where 1.5 times its own minimum effect is wider, that (an MDE can never reach the minimum effect
    itself: it is the minimum effect plus the test's power margin, so a 10% minimum effect's goal is 15%, not
    a 10% no count of runs reaches)."""
    return max(least, 1.5 * minimum)


@dataclass(frozen=True)
class Policy:
    threshold: float = 0.05  # minimum effect of a benchmark with host work in it: smaller is never a verdict
    # minimum effect of GPU-bound work (a ceiling it follows, or declared): it reproduces within ~1%. A
    # one-run MDE is this plus 0.84 standard errors at least (3.1-3.7%); 2% and 2.5% were tried on 2026-11-28,
    # tails taken as normal: nights whose every figure is heavy-tailed flagged 7.2% and 6.2%, 5.2% at 3%
    # (docs/findings.md). It holds where a figure's tails are not read from its runs
    bound_threshold: float = 0.03
    alpha: float = 0.05  # family-wise false-alarm rate over the gating figures compared (Holm)
    # that of a GPU-bound figure whose tails were read from noise.TAIL_RUNS runs of its own, not heavy-tailed:
    # the 3% guards normal tails assumed on few runs; an MDE is this plus 0.84 SE at least, and a 3% one-run
    # MDE needs less than 3 (docs/verdict.md: the simulation's 25-run rows)
    bound_threshold_shown: float = 0.02
    # the re-runs a confirmation (--perfkit-confirm) gives each figure the first look flags: that look's MDEs
    # are then both looks' together (perfkit.verdict.evidence); 0, a night judged on its run alone
    confirm_runs: int = 0

    @classmethod
    def with_threshold(cls, threshold: float | None) -> Policy:
        """The default policy, or one minimum effect for every figure (``--threshold``)."""
        return cls() if threshold is None else cls(threshold, threshold, bound_threshold_shown=threshold)

    @classmethod
    def with_gpu_floor(cls, floor: float) -> Policy:
        """The default policy with another GPU-bound minimum effect, to try one: the narrower one where tails
        are read is never wider than it."""
        return cls(bound_threshold=floor, bound_threshold_shown=min(floor, cls.bound_threshold_shown))


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
    # relative, at 80% power; None where no slowdown of any size is flagged tonight (no run-to-run noise
    # known, runs that never varied, a disturbed run: ``mde_limited_by`` says which of the last two)
    mde: float | None = None
    runs: tuple[int, int] = (1, 1)
    # the change's 1 - 2·alpha interval (relative): ``unchanged`` only where it lies inside the minimum effect
    interval: tuple[float, float] | None = None
    minimum: float | None = None  # the minimum effect worth a verdict (relative), for a judged gating figure
    # a weak figure's (MDE > WEAK_MDE): how many runs of this code judged together against the same
    # baseline would bring its MDE to its goal (sharp_goal); None where no count up to 20 would
    runs_to_see: int | None = None
    # what keeps the MDE where it is tonight that more runs of this code do not change: "" (its noise, or no
    # noise known), else a sentence (runs that never varied, a disturbed run, the run's common host shift)
    mde_limited_by: str = ""
    # whether some count of runs of this code, up to 20, could show the move seen were it to stay: False where
    # none could (a host unlike the baseline's, a blind figure), so that a confirmation does not re-run it
    decidable: bool = True

    @property
    def beyond_minimum(self) -> bool:
        """It moved beyond its minimum effect (on the log scale the test uses)."""
        return (self.change is not None and self.minimum is not None and self.change > -1
                and abs(math.log1p(self.change)) > math.log1p(self.minimum))

    @property
    def worse(self) -> bool:
        """It moved the way that is worse for it."""
        return self.change is not None and self.change != 0 and (self.change > 0) == (self.better == "lower")


@dataclass(frozen=True)
class KindTimeRatio:
    """The geometric mean time ratio (current over baseline) of the benchmarks whose time is one kind of
    work: on a fresh machine with a slower host the host-bound times move together while the GPU-bound
    ones stay (three fresh H200s of 2026-12-04 against the baseline committed before them: 1.19-1.23 and
    1.00, under a whole-run 1.115-1.139), so the whole run's mean alone reads like a slowdown of the code."""

    kind: str  # "GPU-bound" or "host-bound"
    ratio: float
    benchmarks: int


class Reach(NamedTuple):
    """What a first look's test of one figure could reach (logs): its minimum effect, standard error and
    degrees of freedom, and the least move of it that the look sends to a confirmation's re-runs (beyond the
    minimum effect, and one that runs of this code could show: perfkit.confirm.suspects)."""

    floor: float
    se: float
    df: float
    rerun_from: float


@dataclass(frozen=True)
class Comparison:
    baseline_id: str
    current_id: str
    rows: tuple[Row, ...]
    fingerprint_changes: tuple[tuple[str, Any, Any], ...] = ()
    geomean_time_ratio: float | None = None
    hardware_rows: tuple[across.HardwareRow, ...] = field(default=())
    alpha: float = Policy.alpha
    # why the two sides, though of one hardware id, ran on different machines and were compared across
    # hardware instead of judged (PerfkitInfo.machine_change); "" where they were judged
    not_judged: str = ""
    # the run's common host slowdown, where one excused host-bound figures (a confirmation keeps it)
    host: HostShift | None = None
    tests: int = 1  # the gating figures the family-wise error is controlled over (a confirmation keeps it)
    policy: Policy = field(default_factory=Policy)  # the minimum effects and alpha it was judged by
    # each regressed or improved benchmark's kernels on the two sides compared, or why there are none
    why: tuple[Why, ...] = ()
    # the geometric mean time ratio of the GPU-bound and of the host-bound benchmarks apart (same hardware)
    time_ratio_by_kind: tuple[KindTimeRatio, ...] = ()
    # per gating figure tested, what its test could reach: (minimum effect, SE, degrees of freedom), logs
    reach: Mapping[tuple[str, str], Reach] = field(default_factory=dict)
    # which benchmarks are judged against baseline runs of too few sittings of this machine, or ""
    # (perfkit.verdict.sittings)
    sitting: str = ""

    @property
    def same_hardware(self) -> bool:
        return self.baseline_id == self.current_id and not self.not_judged

    @property
    def regressions(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.verdict is Verdict.REGRESSED)

    def benchmark_verdicts(self) -> dict[str, Verdict]:
        """One verdict per benchmark: the worst of its gating figures', and ``changed`` where a count or a
        ratio that should stay put moved; ``info`` for one without gating figures (declared informational:
        shown, not judged, so never counted as unchanged)."""
        out: dict[str, Verdict] = {}
        for row in self.rows:
            if not (row.gating or row.verdict is Verdict.CHANGED):
                continue
            now = out.get(row.benchmark)
            out[row.benchmark] = row.verdict if now is None else min(now, row.verdict, key=WORST_FIRST.index)
        return {row.benchmark: out.get(row.benchmark, Verdict.INFO) for row in self.rows}

    def counts(self) -> dict[Verdict, int]:
        verdicts = list(self.benchmark_verdicts().values())
        return {v: n for v in WORST_FIRST if (n := verdicts.count(v))}

    def not_judged_within(self) -> int:
        """How many benchmarks hold a gating figure ``not judged`` (a one-run baseline entry, too few degrees
        of freedom) that their worse verdict counts under another word: counted apart in the verdict line."""
        verdicts = self.benchmark_verdicts()
        return len({r.benchmark for r in self.rows if r.gating and r.verdict is Verdict.NOT_JUDGED
                    and verdicts[r.benchmark] is not Verdict.NOT_JUDGED})

    def unknown_better(self) -> int:
        """How many ``unknown`` benchmarks moved only the better way (faster, higher): nothing to chase on a
        nightly; the rest moved the worse way in some gating figure, or not at all, and want re-runs."""
        verdicts = self.benchmark_verdicts()
        unknown = {r.benchmark for r in self.rows if r.gating and verdicts[r.benchmark] is Verdict.UNKNOWN}
        not_better = {r.benchmark for r in self.rows
                      if r.gating and r.verdict is Verdict.UNKNOWN and (r.worse or not r.change)}
        return len(unknown - not_better)

    def compared_gating(self) -> tuple[Row, ...]:
        """Gating figures both sides have: the ones judged, each with its minimum detectable effect."""
        return tuple(r for r in self.rows if r.gating and r.verdict not in (Verdict.NEW, Verdict.MISSING))

    def weak(self, limit: float = WEAK_MDE) -> tuple[Row, ...]:
        """Gating figures whose minimum detectable effect exceeds ``limit`` or that have none tonight; none
        across hardware, where a time stands against its expected speedup, not this test."""
        if not self.same_hardware:
            return ()
        return tuple(r for r in self.compared_gating() if r.mde is None or r.mde > limit)

    def beyond_runs(self) -> tuple[Row, ...]:
        """The weak figures that a few more runs of this code (up to :data:`FEW_RUNS`) do not sharpen to
        their goal (:func:`sharp_goal`): they need a less noisy measurement or more baseline runs."""
        return tuple(r for r in self.weak() if r.mde is not None and not r.mde_limited_by
                     and (r.runs_to_see is None or (r.runs_to_see > FEW_RUNS and r.runs_to_see > r.runs[1])))

    def replacing(self, other: Comparison, benchmarks: set[str]) -> Comparison:
        """This comparison with the rows of ``benchmarks`` taken from ``other`` (a confirmation's
        verdicts)."""
        rows = [r for r in self.rows if r.benchmark not in benchmarks]
        rows += [r for r in other.rows if r.benchmark in benchmarks]
        why = [w for w in self.why if w.benchmark not in benchmarks]
        why += [w for w in other.why if w.benchmark in benchmarks]  # the re-runs profiled their work
        return dataclasses.replace(self, rows=tuple(sorted(rows, key=row_order)), why=tuple(why))

    def to_json(self) -> dict[str, Any]:
        """The comparison as plain JSON (``perfkit compare --format json``)."""
        rows = [{**dataclasses.asdict(r), "verdict": r.verdict.value} for r in self.rows]
        return {
            "baseline_id": self.baseline_id,
            "current_id": self.current_id,
            "same_hardware": self.same_hardware,
            "counts": {v.value: n for v, n in self.counts().items()},
            "not_judged_within": self.not_judged_within(),
            "benchmarks": {n: v.value for n, v in self.benchmark_verdicts().items()},
            "rows": rows,
            "fingerprint_changes": [list(c) for c in self.fingerprint_changes],
            "geomean_time_ratio": self.geomean_time_ratio,
            "geomean_time_ratio_by_kind": [dataclasses.asdict(k) for k in self.time_ratio_by_kind],
            "hardware_rows": [dataclasses.asdict(h) | {"far": h.far, "ratio": h.ratio, "verdict": h.verdict}
                              for h in self.hardware_rows],
            "alpha": self.alpha,
            "not_judged": self.not_judged,
            "host_shift": None if self.host is None else math.expm1(self.host.shift),
            "why": [w.to_json() for w in self.why],
            "sitting": self.sitting,
        }


def row_order(row: Row) -> tuple[str, bool, str]:
    """The order rows are listed in: by benchmark, its gating figures first, then by figure."""
    return row.benchmark, not row.gating, row.figure


@dataclass(frozen=True)
class FirstLook:
    """What a confirmation's second look keeps of the first: how many gating figures the night tested (its
    re-runs are tested at Bonferroni's ``alpha / tests``, whatever the first look selected, so the two stages
    together keep the family-wise error at ``alpha``: a figure ends ``regressed`` only if its second test
    says so, and each second test errs with chance ``alpha / tests`` at most) and the first run's common
    host slowdown (a second look never computes one from its suspects, which were chosen for being worse)."""

    tests: int
    host: HostShift | None = None
    # what the first look's test of each figure could reach: a re-run figure's MDE is the two looks' together
    reach: Mapping[tuple[str, str], Reach] = field(default_factory=dict)

    @classmethod
    def of(cls, first: Comparison) -> FirstLook:
        return cls(first.tests, first.host, first.reach)
