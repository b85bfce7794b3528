"""The one judge: two result sets in, a verdict per figure and per benchmark out; no I/O, no printing.

The end-of-run summary, ``perfkit compare`` and ``perfkit report`` all call :func:`judge` with result sets
read by the one loader (perfkit.resultfile.load) and the noise of one rule (perfkit.verdict.noise), so the
same pair of files gets the same verdicts from each.

The run is the unit of replication (perfkit.resultfile.run_spread). Each gating figure of a benchmark is
tested as a prediction: is the current runs' mean (log scale) where the baseline's runs and the hardware's
noise say a run of unchanged code lands? The noise is the figure's own run-to-run variance, from every run
kept for the hardware, moderated by empirical Bayes over the figures of its class (perfkit.verdict.noise),
plus a between-machine term where the two sides ran on different machines. A figure

- is **unchanged** only where its change's ``1 - 2·alpha`` interval lies inside the minimum effect worth a
  verdict (3% for a GPU-bound benchmark, one that follows a GPU ceiling or declares ``gpu_bound``, 2% where
  20 or more runs of its own let its tails be read; 5% otherwise; or the benchmark's own tolerance): an
  equivalence test at ``alpha``;
- is **regressed** / **improved** beyond it *and* when the t-test of that prediction is significant after
  Holm's correction over every gating figure compared (family-wise false-alarm rate ``alpha``, 5%; a
  confirmation's re-runs at Bonferroni's level over the same figures, :class:`FirstLook`);
- is **unknown** otherwise, saying what would settle it, as Chromium's Pinpoint and nvbench answer
  "ambiguous" rather than guess;
- is **not judged** where its baseline holds fewer than :data:`MIN_BASELINE_RUNS` runs of it, and
  **measured differently** where the two sides measured it another way (a method version, a locked clock):
  shown side by side, never judged.

Across hardware there is no regression or improvement of the code, only another machine: each benchmark's
speedup stands against the speedup expected of it (perfkit.verdict.across), and the gating row of its own
figure says ``as expected``, ``faster`` or ``slower`` (than expected) or ``FAR from expected``; a benchmark
without an expectation, and every other gating time, is ``faster`` or ``slower`` where the test above would
have said improved or regressed; another gating figure that moved (a GEMM's SM cycles, a memory peak) differs
on the other machine and is ``info``: another GPU spends other cycles and other memory on the same code, so
neither is the code's change nor an alarm; so is a gating figure that only one machine measured (one gating
since the other's baseline was saved).

Every gating figure gates: a noisy one gets a wider interval from its own noise, never a pass. A figure
that got worse while other processes kept a quarter or more of the run's CPUs busy (the host load the
plugin records), or while heat held its GPU's clocks down for over 5% of its run, is **unknown**, whatever
its p-value: on a shared 2-vCPU runner a neighbour alone makes a two-thread benchmark 60-70% slower (the A/B
holds back a figure whose pairs were so disturbed by the same rule, :func:`held_back`). So is a host-bound
figure within the run's common host slowdown (HostShift).

Only gating figures get those verdicts: a benchmark gates on its time unless it names another figure (a
host-paced step's time on the GPU alone; or none, declared informational with its reason), plus metrics
declared to gate (allocator peaks). Figures derived from the time (bandwidth, % of peak, speedups, energy)
follow it and are shown as ``info``; counts that should not change (FLOPs, parameters, a step's operators)
are ``changed`` when they move at all, and ratios that should stay put when they move beyond the minimum
effect and significantly.
Each gating figure carries its minimum detectable effect (MDE): the change this policy and this noise flag
80% of the time.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perfkit.explain import why
from perfkit.resultfile.figures import TIME, TIME_UNIT, TIME_UNITS
from perfkit.resultfile.fingerprint import CHANGE_FIELDS, SOFTWARE_FIELDS
from perfkit.resultfile.model import ResultSet, run_count
from perfkit.resultfile.payloads import Disturbance
from perfkit.verdict import across, machine_spread, sittings, stats, time_ratios
from perfkit.verdict.comparison import (
    COUNT_MOVED,
    DIFFERS,
    NOT_APART,
    ONE_MACHINE,
    WEAK_MDE,
    WORST_FIRST,
    Comparison,
    FirstLook,
    Policy,
    Row,
    Verdict,
    row_order,
)
from perfkit.verdict.evidence import MOST_RUNS, NEVER_VARIED, Evidence
from perfkit.verdict.expected import Workloads
from perfkit.verdict.host_shift import HostShift
from perfkit.verdict.matching import FigureRuns, Pairing, pair
from perfkit.verdict.noise import HOST_KIND, FigureNoise, Noise, machine_shares

#: What the judge gives and judges by (perfkit.verdict.comparison, perfkit.verdict.host_shift) is importable
#: from here too, where the end-of-run summary, the reports and the tests have always found it.
__all__ = [
    "COUNT_MOVED", "DEFAULT_POLICY", "DIFFERS", "FINGERPRINT_FIELDS", "MIN_BASELINE_RUNS", "MOST_RUNS",
    "NEVER_VARIED", "ONE_MACHINE",
    "SOFTWARE_FIELDS",
    "WORST_FIRST",
    "Comparison", "FirstLook", "HostShift", "Policy", "Row", "Verdict", "counted", "fingerprint_changes",
    "held_back", "judge", "minimum_effect",
]

#: The policy a comparison is judged by unless told otherwise (3%, 2% and 5% minimum effects, alpha 5%).
DEFAULT_POLICY = Policy()
#: Fingerprint fields whose change is shown beside the verdicts (the record's hardware and software fields).
FINGERPRINT_FIELDS = CHANGE_FIELDS


def judge(baseline: ResultSet, current: ResultSet, noise: Noise, policy: Policy = DEFAULT_POLICY,
          workloads: Workloads | None = None, first_look: FirstLook | None = None,
          lenders: Sequence[ResultSet] = ()) -> Comparison:
    """Judge every benchmark of ``current`` against ``baseline``, run by run, with the hardware's
    ``noise``; across hardware, ``workloads`` counts each benchmark's work for the expected speedup (and
    ``lenders``, one-GPU runs, lend a side of several GPUs their launch costs). Runs of one hardware id on
    different machines (another CPU generation) are not judged, only compared across hardware.
    ``first_look``: where ``current`` holds the re-runs of a confirmation, what the first look tested
    (:class:`FirstLook`)."""
    paired = pair(baseline, current)
    change = baseline.info.machine_change(current.info) if baseline.hardware_id == current.hardware_id else ""
    if change:  # another machine under the same id: its speedups say how far apart they are, not a verdict
        speedups = across.hardware_rows(baseline, current, paired.common, workloads, lenders=lenders)
        changes = fingerprint_changes(baseline, current)
        return Comparison(baseline.hardware_id, current.hardware_id, (), changes,
                          across.geomean_time_ratio(speedups), speedups, policy.alpha, change, policy=policy)
    machines = machine_shares(current)
    base_runs, cur_runs = baseline.runs(), current.runs()
    rows = [_absent_row(b.fullname, b.median, verdict, run_count(runs[b.fullname]))
            for entries, verdict, runs in ((paired.only_baseline, Verdict.MISSING, base_runs),
                                           (paired.only_current, Verdict.NEW, cur_runs)) for b in entries]
    changes = fingerprint_changes(baseline, current)
    software_changed = any(field in SOFTWARE_FIELDS for field, _, _ in changes)
    host = first_look.host if first_look is not None else HostShift.of(paired.figures, noise, policy)
    if baseline.hardware_id != current.hardware_id or current.info.device != "cuda" or software_changed:
        host = None
    tests = first_look.tests if first_look is not None else max(1, sum(f.judged for f in paired.figures))
    judged = _judge_each(paired, noise, policy, host, machines, tests, first_look,
                         widen=baseline.hardware_id == current.hardware_id)
    reach = {(j.row.benchmark, j.row.figure): e.reach(policy.alpha / tests)
             for j in judged if (e := j.evidence)}
    rows += _corrected(judged, policy, tests, first_look)
    rows.sort(key=row_order)
    if baseline.hardware_id == current.hardware_id:
        hardware_rows: tuple[across.HardwareRow, ...] = ()
        geomean, by_kind = time_ratios.of(paired, base_runs, cur_runs, noise, current.info.device == "cuda")
    else:
        hardware_rows = across.hardware_rows(baseline, current, paired.common, workloads, lenders=lenders)
        geomean, by_kind = across.geomean_time_ratio(hardware_rows), ()
        rows = _across_hardware(rows, hardware_rows)
    flagged = dict.fromkeys((r.benchmark, r.verdict.value) for r in rows
                            if r.gating and r.verdict in (Verdict.REGRESSED, Verdict.IMPROVED))
    return Comparison(
        baseline.hardware_id,
        current.hardware_id,
        tuple(rows),
        changes,
        geomean,
        hardware_rows,
        policy.alpha,
        host=host,
        tests=tests,
        policy=policy,
        why=why.of(baseline, current, list(flagged)),
        time_ratio_by_kind=by_kind,
        reach=reach,
        sitting=sittings.few_sittings(baseline, current),
    )


def _across_hardware(rows: list[Row], hardware: tuple[across.HardwareRow, ...]) -> list[Row]:
    """Another machine's verdicts: each gating time of a benchmark with an expected speedup says how its
    speedup stands to it; elsewhere what would be regressed or improved on one machine is slower or faster
    (a time in any unit: a launch-bound step's time on the GPU alone too) or differs on the other machine
    (another gating figure: SM cycles, a memory peak, which another GPU spends differently on the same code:
    ``info``, its p-value dropped, no alarm), and a ratio that should stay put on one machine is shown, not
    judged, as is a gating figure only one side has or one that its test could not tell apart (``unknown`` on
    one machine, where more runs decide); one left untested (a busy host) stays ``unknown``, said to be on
    another machine."""
    expected = {h.benchmark: h for h in hardware if h.verdict is not None}
    out = []
    for row in rows:
        found = expected.get(row.benchmark)
        if row.verdict is Verdict.MEASURED_DIFFERENTLY:
            pass  # another method or clock: no speedup of the code or the machine is read from it
        elif row.gating and found is not None and row.unit == TIME_UNIT and row.current is not None:
            row = dataclasses.replace(row, verdict=Verdict(found.verdict), p_value=None,
                                      note=found.sentence())
        elif row.verdict in (Verdict.REGRESSED, Verdict.IMPROVED) and row.unit in TIME_UNITS:
            row = dataclasses.replace(row, verdict=Verdict.SLOWER if row.worse else Verdict.FASTER,
                                      note=f"on another machine; {row.note}".rstrip("; "))
        elif row.verdict in (Verdict.REGRESSED, Verdict.IMPROVED):
            row = dataclasses.replace(row, verdict=Verdict.INFO, p_value=None,
                                      note=f"{DIFFERS}; {row.note}".rstrip("; "))
        elif row.verdict is Verdict.CHANGED and not row.note.startswith(COUNT_MOVED):
            row = dataclasses.replace(row, verdict=Verdict.INFO, note=f"on another machine; {row.note}")
        elif row.verdict in (Verdict.UNKNOWN, Verdict.NOT_JUDGED) and (row.baseline is None) != (
                row.current is None):
            row = dataclasses.replace(row, verdict=Verdict.INFO, note=ONE_MACHINE)
        elif row.verdict is Verdict.UNKNOWN and (row.p_value is not None or row.note.startswith(INSIDE)):
            # the test could not tell the two apart; "more runs decide" is a verdict on the code: not here
            row = dataclasses.replace(row, verdict=Verdict.INFO, p_value=None, note=NOT_APART)
        elif row.verdict is Verdict.UNKNOWN:  # untested: a busy host, runs that never varied, a zero
            row = dataclasses.replace(row, note=f"on another machine; {row.note}")
        out.append(row)
    return out


def _absent_row(name: str, median: float, verdict: Verdict, runs: int) -> Row:
    """A benchmark on one side only, with how many runs that side holds of it (none on the other)."""
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
        runs=(runs, 0) if missing else (0, runs),
    )


#: A figure's baseline needs this many runs of its own to be judged: one run says nothing of how far the
#: figure moves between runs, and a verdict on the prior alone claimed MDEs of 152% to over 1000%.
MIN_BASELINE_RUNS = 3


@dataclass(frozen=True)
class _Judged:
    """A row before the family-wise correction: gating rows beyond their minimum effect carry a p-value to
    correct, and so do ratios that should stay put and moved beyond it (``ratio``: one of the ratios
    compared, a family of their own)."""

    row: Row
    p_value: float | None = None
    evidence: Evidence | None = None  # for the MDE at the corrected level
    ratio: bool = False


def minimum_effect(fig: FigureRuns, policy: Policy, noise: FigureNoise | None = None) -> float:
    """The smallest change worth a verdict: the benchmark's own tolerance, else the policy's for its kind; a
    GPU-bound figure whose ``noise`` rests on enough runs of its own to show light tails takes the policy's
    narrower one (Policy.bound_threshold_shown)."""
    if fig.tolerance is not None:
        return fig.tolerance
    if not fig.gpu_bound:
        return policy.threshold
    return policy.bound_threshold_shown if noise is not None and noise.tails_shown else policy.bound_threshold


def _judge_each(paired: Pairing, noise: Noise, policy: Policy, host: HostShift | None,
                machines: Mapping[str, Mapping[str, float]], tests: int, first_look: FirstLook | None,
                widen: bool) -> list[_Judged]:
    """Each figure judged with its noise, a host-bound one with the run's host shift, and where ``widen``
    (one hardware) one whose noise lies between machines at a widened minimum effect (:func:`_widening`)."""
    return [_judge_figure(f, policy, noise.of_figure(f.benchmark, f.figure, f.current,
                                                     machines.get(f.benchmark)),
                          host if noise.kinds.get((f.benchmark, f.figure)) == HOST_KIND else None,
                          _widening(f, policy, noise, machines.get(f.benchmark), policy.alpha / tests,
                                    first_look) if widen else None)
            for f in paired.figures]


def _widening(fig: FigureRuns, policy: Policy, noise: Noise, machine: str | Mapping[str, float] | None,
              level: float, first_look: FirstLook | None) -> tuple[float, str] | str | None:
    """The minimum effect, and why, of a figure whose noise lies between machines, where one run on this
    machine cannot see its declared one (perfkit.verdict.machine_spread), from the baseline's noise alone; a
    second look keeps the first look's. None where the declared one stands; why not, where not judged."""
    b, c = fig.baseline, fig.current
    if not fig.judged or len(b) < MIN_BASELINE_RUNS or not c or min(b + c) <= 0:
        return None
    alone = noise.of_figure(fig.benchmark, fig.figure, (), machine)
    if alone is None:
        return None
    picked = first_look.reach.get((fig.benchmark, fig.figure)) if first_look is not None else None
    return machine_spread.widening(fig, noise, alone, minimum_effect(fig, policy, alone),
                                   _standard_error(fig, alone, 1), level, picked, machine)


def _judge_figure(fig: FigureRuns, policy: Policy, noise: FigureNoise | None, host: HostShift | None = None,
                  widening: tuple[float, str] | str | None = None) -> _Judged:
    """``widening``: a minimum effect to judge at instead of the declared one, and why, or why it is not
    judged on this machine (:func:`_widening`)."""
    b, c = fig.baseline, fig.current
    if not b or not c:
        if not fig.judged:
            return _Judged(_row(fig, Verdict.NEW if not b else Verdict.MISSING))
        if not b:  # a figure the benchmark gates on since its baseline was saved: nothing to judge it against
            note = (f"not judged: a gating figure only this run has; re-save its baseline entry from "
                    f"{MIN_BASELINE_RUNS} runs of this code")
            return _Judged(_row(fig, Verdict.NOT_JUDGED, note, True))
        return _Judged(_row(fig, Verdict.UNKNOWN, "a gating figure only the baseline has: this run "
                                                  "did not record it", True))
    if fig.judged:
        if isinstance(widening, str) and fig.measured_differently is None:
            return _Judged(_row(fig, Verdict.NOT_JUDGED, widening, True))
        if not isinstance(widening, tuple):
            return _gate(fig, minimum_effect(fig, policy, noise), noise, policy.alpha, host)
        out = _gate(fig, widening[0], noise, policy.alpha, host)
        return dataclasses.replace(out, row=dataclasses.replace(out.row, note="; ".join(
            n for n in (out.row.note, widening[1]) if n)))
    return _informational(fig, minimum_effect(fig, policy, noise), noise)


def _row(fig: FigureRuns, verdict: Verdict, note: str = "", gating: bool = False,
         evidence: Evidence | None = None, alpha: float = Policy.alpha) -> Row:
    """A figure's row: the two sides' geometric means and the change between them, from the same mean logs
    the test uses (an arithmetic mean of 1.0, 1.0 and 3.0 ms against 1.6 ms read -4.0% where the test saw
    +10.9%)."""
    base, cur = fig.base_mean, fig.cur_mean
    if base is None or cur is None:
        change = None
    elif min(fig.baseline + fig.current) > 0:
        change = math.expm1(stats.log_shift(fig.baseline, fig.current))
    else:
        change = stats.relative_change(base, cur)
    interval = None if evidence is None else stats.interval(evidence.shift, evidence.se, evidence.df, alpha)
    return Row(benchmark=fig.benchmark, figure=fig.figure, unit=fig.unit, better=fig.better, baseline=base,
               current=cur, change=change, verdict=verdict, note=note, gating=gating,
               runs=(len(fig.baseline), len(fig.current)), interval=interval,
               minimum=None if evidence is None else math.expm1(evidence.floor))


def _df_with(noise: FigureNoise, current: Sequence[float], runs: int) -> float:
    """The degrees of freedom of ``noise`` had the current side held ``runs`` runs (as many as ``current``
    or more): each run beyond the first adds one (perfkit.verdict.noise pools the current side's runs), up
    to what its tails allow."""
    return min(noise.tail_df, noise.df + max(0, runs - 1) - max(0, len(current) - 1))


def _standard_error(fig: FigureRuns, noise: FigureNoise, current_runs: int | None = None) -> float:
    """Of the difference of the two sides' mean log values: the moderated noise of each side's mean, and the
    between-machine term where the sides ran on different machines (``current_runs``: as if the current side
    held that many)."""
    runs = len(fig.current) if current_runs is None else current_runs
    return math.sqrt(noise.sd**2 * (1 / len(fig.baseline) + 1 / runs) + noise.between_sd**2)


def _informational(fig: FigureRuns, minimum: float, noise: FigureNoise | None) -> _Judged:
    """Figures that do not gate: derived ones are shown; a count the code alone decides is ``changed`` when it
    moves at all; a ratio that should stay put, or a count read off the machine, when it moves beyond the
    minimum effect and significantly
    (Holm over the ratios compared, in :func:`_corrected`: a run holds dozens, and uncorrected one in twenty
    would move by chance)."""
    if fig.measured_differently is not None:  # shown with why its two sides cannot be compared
        return _Judged(_row(fig, Verdict.INFO, fig.measured_differently))
    if fig.better != "none":
        return _Judged(_row(fig, Verdict.INFO))
    base, cur = fig.base_mean or 0.0, fig.cur_mean or 0.0
    # a count the code decides: any move is a change (one read off the machine is weighed as a ratio is)
    if fig.exact and all(float(v).is_integer() for v in fig.baseline + fig.current):
        moved = set(fig.baseline) != set(fig.current)
        return _Judged(_row(fig, Verdict.CHANGED if moved else Verdict.INFO, COUNT_MOVED if moved else ""))
    if abs(stats.relative_change(base, cur)) <= minimum:
        return _Judged(_row(fig, Verdict.INFO), ratio=True)
    if min(base, cur) <= 0 or noise is None:
        note = "a figure that should stay put (no run-to-run noise is known to weigh it)"
        return _Judged(_row(fig, Verdict.CHANGED, note), ratio=True)
    se = _standard_error(fig, noise)
    p_value = 1.0 if se == 0 else stats.two_sided_p(math.log(cur / base) / se, noise.df)
    return _Judged(_row(fig, Verdict.CHANGED, f"a figure that should stay put (p={p_value:.2g})"), p_value,
                   ratio=True)


def _gate(fig: FigureRuns, minimum: float, noise: FigureNoise | None, alpha: float,
          host: HostShift | None = None) -> _Judged:
    b, c = fig.baseline, fig.current
    if fig.measured_differently is not None:  # different by the method, not the code: never judged
        return _Judged(_row(fig, Verdict.MEASURED_DIFFERENTLY, fig.measured_differently, True))
    if len(b) < MIN_BASELINE_RUNS:
        return _Judged(_row(fig, Verdict.NOT_JUDGED, f"not judged: needs {MIN_BASELINE_RUNS} baseline "
                                                     f"runs (it has {len(b)}); re-save its baseline "
                                                     "entry from more runs", True))
    if min(b + c) <= 0:  # no log scale: only the same value on every run of both sides is evidence
        same = len(set(b + c)) == 1
        return _Judged(_row(fig, Verdict.UNCHANGED if same else Verdict.UNKNOWN,
                            "" if same else "a zero or negative figure: no log scale to judge it on", True))
    if noise is None:
        note = "not judged: no run-to-run noise is known for this figure"
        return _Judged(_row(fig, Verdict.NOT_JUDGED, note, True))
    shift = stats.log_shift(b, c)
    floor = math.log1p(minimum)
    worse = shift if fig.better == "lower" else -shift
    se = _standard_error(fig, noise)
    more = tuple((n, _standard_error(fig, noise, n), _df_with(noise, c, n))
                 for n in range(len(c), max(len(c), MOST_RUNS) + 1))
    slows_with_host = host is not None and fig.better == "lower" and fig.unit == TIME_UNIT
    held = held_back(fig.disturbances)
    evidence = Evidence(shift, se, noise.df, floor, more, slowdown_host=host if slows_with_host else None,
                         held_back=held)
    if se == 0:  # runs that never varied: a tie, no noise to weigh a change against (never p = 0)
        if shift == 0:
            return _Judged(_row(fig, Verdict.UNCHANGED, gating=True, evidence=evidence, alpha=alpha),
                           evidence=evidence)
        return _Judged(_row(fig, Verdict.UNKNOWN, "its runs never varied: no noise is known to weigh this "
                                                  "change; more runs decide", True, evidence, alpha),
                       evidence=evidence)
    if abs(shift) <= floor:
        return _inside(fig, noise, evidence, alpha)
    if worse > 0 and held is not None:
        return _Judged(_row(fig, Verdict.UNKNOWN, held, True, evidence, alpha), evidence=evidence)
    note = ""
    if worse > 0 and host is not None and slows_with_host:
        if shift - host.shift <= floor:
            return _Judged(_row(fig, Verdict.UNKNOWN, host.sentence(), True, evidence, alpha),
                           evidence=evidence)
        shift, se = shift - host.shift, host.widened(se)
        evidence = dataclasses.replace(evidence, host=host)
        note = f"tested on what remains beyond the run's common host shift ({math.expm1(host.shift):+.0%})"
    p_value = stats.two_sided_p(shift / se, noise.df)
    verdict = Verdict.REGRESSED if worse > 0 else Verdict.IMPROVED
    return _Judged(_row(fig, verdict, note, True, evidence, alpha), p_value, evidence)


def held_back(disturbances: Iterable[Disturbance]) -> str | None:
    """Why a figure that got worse is ``unknown`` whatever its p-value: the sentence of the first of
    ``disturbances`` that disturbed its run (a busy host, a hot GPU: a neighbour alone makes a two-thread
    benchmark 60-70% slower); None where none did. The one rule of the nightly judge and of the A/B
    (perfkit.ab), so that the two never give one slowdown two verdicts."""
    disturbed = next((d for d in disturbances if d.disturbed), None)
    return None if disturbed is None else disturbed.sentence()


#: How the note of a change inside the minimum effect but not shown to be begins (:func:`_inside`).
INSIDE = "inside the minimum effect"


def effect_bounds(floor: float) -> str:
    """The minimum effect's two ends as relative changes (``floor``: log scale, as the test reads it), so that
    an interval printed beside them is read against the same ends: ±5% is -4.8% to +5.0%."""
    return f"{math.expm1(-floor):+.1%} to {math.expm1(floor):+.1%}"


def _inside(fig: FigureRuns, noise: FigureNoise, evidence: Evidence, alpha: float) -> _Judged:
    """A change inside the minimum effect: ``unchanged`` where its whole interval is inside too (an
    equivalence test at ``alpha``), said with that interval, else ``unknown`` with the interval and what
    would settle it."""
    row = _row(fig, Verdict.UNCHANGED, gating=True, evidence=evidence, alpha=alpha)
    assert row.interval is not None  # evidence was given
    low, high = row.interval
    bounds = effect_bounds(evidence.floor)
    quantile = stats.t_quantile(alpha, evidence.df)
    if abs(evidence.shift) + quantile * evidence.se <= evidence.floor:
        said = f"its interval {low:+.1%} to {high:+.1%} lies inside the minimum effect ({bounds})"
        return _Judged(dataclasses.replace(row, note=said), evidence=evidence)
    note = (f"{INSIDE} ({bounds}) but not shown to be: its interval "
            f"runs from {low:+.1%} to {high:+.1%}; {_settles(fig, noise, evidence, quantile)}")
    return _Judged(dataclasses.replace(row, verdict=Verdict.UNKNOWN, note=note), evidence=evidence)


def _settles(fig: FigureRuns, noise: FigureNoise, evidence: Evidence, quantile: float) -> str:
    """What would settle a change inside the minimum effect, were it to stay where it is: how many runs of
    this code, or more baseline runs where this side's runs cannot narrow the interval enough (``quantile``:
    the interval's t quantile)."""
    target = (evidence.floor - abs(evidence.shift)) / quantile
    for runs in (2, 3, 5, 8, 12, 20):
        if runs > len(fig.current) and _standard_error(fig, noise, runs) <= target:
            return f"about {runs} runs of this code judged together would settle it"
    return ("more runs of this code cannot settle it: the baseline's runs, or the noise between machines, "
            "limit it; re-save the baseline from more runs")


def _corrected(judged: list[_Judged], policy: Policy, tests: int, first_look: FirstLook | None = None
               ) -> list[Row]:
    """The family-wise correction over the ``tests`` gating figures (Holm's step-down; Bonferroni's level for
    a confirmation's second look, ``first_look`` given), and apart Holm over every ratio that should stay put;
    then each gating row's MDE at that level and 80% power (of both looks together, the first picking the
    figure and the second confirming it, on a second look and on a first look that a confirmation follows:
    ``policy.confirm_runs``)."""
    bonferroni = first_look is not None
    confirm_runs = 0 if bonferroni else policy.confirm_runs  # a second look is the confirmation
    ratios = [j for j in judged if j.ratio]
    gating_tested = [j for j in judged if j.row.gating and j.p_value is not None]
    if bonferroni:
        significant = {id(j): (j.p_value or 0.0) <= policy.alpha / tests for j in gating_tested}
    else:
        significant = dict(zip(map(id, gating_tested),
                               stats.holm([j.p_value or 0.0 for j in gating_tested], policy.alpha, tests)))
    tested_ratios = [j for j in ratios if j.p_value is not None]
    significant |= dict(zip(map(id, tested_ratios), stats.holm([j.p_value or 0.0 for j in tested_ratios],
                                                               policy.alpha, max(1, len(ratios)))))
    rows = []
    for j in judged:
        row = j.row
        if (e := j.evidence) is not None:
            # at Bonferroni's level over the night, Holm's first step: the 80%-power point
            level = policy.alpha / tests
            picked = first_look.reach.get((row.benchmark, row.figure)) if first_look is not None else None
            mde = e.mde(level, picked, confirm_runs)
            # in one look, runs judged together: a confirmation's first run must pick the figure, and no
            # count of re-runs makes up for a first run too noisy to
            runs = e.runs_to_see(level, picked) if mde is not None and mde > WEAK_MDE else None
            row = dataclasses.replace(row, mde=mde, runs_to_see=runs, mde_limited_by=e.limited_by())
        if j.p_value is not None and j.ratio:
            if not significant[id(j)]:
                row = dataclasses.replace(row, verdict=Verdict.INFO,
                                          note=f"within its run-to-run noise after correcting for "
                                               f"{counted(len(ratios), 'ratio')} (p={j.p_value:.2g})")
        elif j.p_value is not None:
            if significant[id(j)]:
                row = dataclasses.replace(row, p_value=j.p_value)
            else:
                decidable = e is None or e.decidable(policy.alpha / tests)
                fix = ("run it on a host like the baseline's" if e is not None and e.host is not None
                       else "re-save the baseline from more runs, or measure it less noisily")
                decide = ("more runs decide" if decidable
                          else f"even {MOST_RUNS} runs of this code could not show a move this size: {fix}")
                note = (f"beyond the minimum effect but not significant after correcting for "
                        f"{counted(tests, 'figure')} (p={j.p_value:.2g}); {decide}")
                row = dataclasses.replace(row, verdict=Verdict.UNKNOWN, p_value=j.p_value,
                                          decidable=decidable,
                                          note=f"{row.note}; {note}" if row.note else note)
        rows.append(row)
    return rows


def counted(count: int, word: str) -> str:
    """``count`` and ``word``, plural unless one ("1 figure", "85 figures")."""
    return f"{count} {word}" + ("" if count == 1 else "s")


def fingerprint_changes(baseline: ResultSet, current: ResultSet) -> tuple[tuple[str, Any, Any], ...]:
    """(field, before, after) of each fingerprint field that differs (shown beside verdicts and trends); a
    field only one side recorded (added to the fingerprint after the older run) is not a change."""
    return baseline.info.fingerprint.changes(current.info.fingerprint)
