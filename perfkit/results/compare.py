"""Comparison of two result sets as a pure function: no I/O, no printing (``report`` renders it).

The run is the unit of replication (perfkit.results.runs). For each gating figure perfkit takes every
run's median on each side and the between-run spread ``s`` (the SD of log run values, pooled over the
sides that have several runs, else the spread stored with the hardware's baseline). A figure

- is **unchanged** when it moved less than its band, ``max(threshold, k·s)``: the minimum effect
  worth a verdict (5% by default, ``extra_info["tolerance"]`` per benchmark) or ``k`` (3) times the
  spread, whichever is larger;
- **regressed** / **improved** beyond the band *and* when a t-test on the log run medians is
  significant after Holm's correction for the number of gating figures compared (family-wise
  false-alarm rate ``alpha``, 5%);
- **unknown** beyond the band but without that evidence (too few runs, or not significant):
  more runs decide it (``--perfkit-confirm``), as Chromium's Pinpoint and nvbench answer
  "ambiguous" rather than guess;
- **not gated** when its runs spread by more than ``unstable`` (max-min over median, 10%), the
  TorchBench stability check: reported with its change, never a failure.

A figure that got worse while other processes kept a quarter or more of the run's CPUs busy
(``extra_info["host_load"]``, recorded by the plugin) is **unknown**, whatever its p-value: on a
shared 2-vCPU runner a neighbour alone makes a two-thread benchmark 60-70% slower.

Only gating figures get those verdicts: a benchmark gates on its time unless it names another
figure (``extra_info["gate"]``: a metric, or ``"none"``), plus metrics recorded with ``gate=True``
(allocator peaks). Figures derived from the time (bandwidth, % of peak, speedups, energy) follow
it and are shown as ``info``; counts that should not change (FLOPs, parameters) as ``changed``
when they move at all, ratios that should stay put when they move beyond the band a gating figure
gets, unless their baseline runs already spread by more than ``unstable`` (then ``info``: too noisy to judge).
Each gating figure carries its minimum detectable effect (MDE): the smallest change this policy
and these runs would call significant.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from perfkit.errors import UsageError
from perfkit.results import datasheet, payloads
from perfkit.results.baselines import hardware_id_of, perfkit_info
from perfkit.results.metrics import metrics_of
from perfkit.results.runs import TIME, Figures, Spread, runs_of, stored_noise

#: Benchmark verdicts, worst first: a benchmark takes the worst verdict of its gating figures.
VERDICTS: tuple[str, ...] = ("regressed", "unknown", "improved", "not gated", "unchanged", "new", "missing")
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
    metric: str
    unit: str
    better: str
    baseline: float | None
    current: float | None
    change: float | None
    verdict: str
    p_value: float | None = None
    note: str = ""
    gating: bool = False
    mde: float | None = None  # relative; None where no run-level spread is known
    runs: tuple[int, int] = (1, 1)


@dataclass(frozen=True)
class HardwareRow:
    """Across machines: the measured speedup beside what the relevant ceiling ratio predicts."""

    benchmark: str
    speedup: float
    bound: str | None
    expected: float | None

    #: The factor, either way, by which a speedup may miss its ceiling's ratio before it needs explaining
    #: (run-to-run noise and the share of a step that is not the bound's kernel both move it).
    FAR: ClassVar[float] = 1.25

    @property
    def far(self) -> bool:
        """The speedup misses the ratio of the ceiling that bounds it by more than the factor FAR."""
        return self.expected is not None and not 1 / self.FAR <= self.speedup / self.expected <= self.FAR


@dataclass(frozen=True)
class Comparison:
    baseline_id: str
    current_id: str
    rows: tuple[Row, ...]
    fingerprint_changes: tuple[tuple[str, Any, Any], ...] = ()
    geomean_time_ratio: float | None = None
    hardware_rows: tuple[HardwareRow, ...] = field(default=())
    alpha: float = Policy.alpha

    @property
    def same_hardware(self) -> bool:
        return self.baseline_id == self.current_id

    @property
    def regressions(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.verdict == "regressed")

    def benchmark_verdicts(self) -> dict[str, str]:
        """One verdict per benchmark: the worst of its gating figures (``unchanged`` if it has none)."""
        out: dict[str, str] = {}
        for row in self.rows:
            if row.gating:
                now = out.get(row.benchmark)
                out[row.benchmark] = row.verdict if now is None else min(now, row.verdict, key=VERDICTS.index)
            else:
                out.setdefault(row.benchmark, "unchanged")
        return out

    def counts(self) -> dict[str, int]:
        verdicts = list(self.benchmark_verdicts().values())
        return {v: n for v in VERDICTS if (n := verdicts.count(v))}

    def weak(self, limit: float = 0.10) -> tuple[Row, ...]:
        """Gating figures whose minimum detectable effect exceeds ``limit`` (or is unknown)."""
        return tuple(r for r in self.rows if r.gating and r.verdict not in ("not gated", "new", "missing")
                     and (r.mde is None or r.mde > limit))


def compare(baseline: Mapping[str, Any], current: Mapping[str, Any], policy: Policy = Policy(),
            noise: Mapping[str, Any] | None = None) -> Comparison:
    """Compare every benchmark of ``current`` with ``baseline``, run by run.

    ``noise``: a baseline file of the same hardware whose stored spreads stand in where neither side
    holds several runs (default: ``baseline`` itself).
    """
    base = {b["fullname"]: b for b in baseline["benchmarks"]}
    cur = {b["fullname"]: b for b in current["benchmarks"]}
    base_runs, cur_runs = runs_of(baseline), runs_of(current)
    spreads = stored_noise(noise if noise is not None else baseline)
    judged: list[_Judged] = []
    rows: list[Row] = []
    for name in sorted(base.keys() | cur.keys()):
        if name not in cur or name not in base:
            known = base.get(name) or cur[name]
            value = float(known["stats"]["median"])
            rows.append(Row(name, TIME, "s", "lower", value if name in base else None,
                            value if name in cur else None, None, "missing" if name not in cur else "new",
                            gating=True))
            continue
        judged.extend(_benchmark(name, base[name], cur[name], base_runs[name], cur_runs[name],
                                 spreads.get(name, {}), policy))
    rows.extend(_holm(judged, policy))
    rows.sort(key=lambda r: (r.benchmark, not r.gating, r.metric))
    common = sorted(base.keys() & cur.keys())
    base_id, cur_id = hardware_id_of(baseline), hardware_id_of(current)
    hardware_rows = () if base_id == cur_id else tuple(
        _hardware_row(n, base[n], cur[n], base_runs[n], cur_runs[n], baseline, current) for n in common)
    if hardware_rows:  # across hardware a ceiling's benchmark counts by its rate: its size differs by device
        ratios = [1 / h.speedup for h in hardware_rows if 0 < h.speedup < math.inf]
    else:
        ratios = [statistics.fmean(cur_runs[n][TIME]) / statistics.fmean(base_runs[n][TIME]) for n in common
                  if statistics.fmean(base_runs[n][TIME]) > 0 and statistics.fmean(cur_runs[n][TIME]) > 0]
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
    return Comparison(base_id, cur_id, tuple(rows), _fingerprint_changes(baseline, current), geomean, hardware_rows,
                      policy.alpha)


@dataclass(frozen=True)
class _Judged:
    """A row before Holm's correction: gating rows beyond their band carry a p-value to correct."""

    row: Row
    p_value: float | None = None
    evidence: Any = None  # (df, se) for the MDE at the corrected level


def gating_figures(bench: Mapping[str, Any]) -> set[str]:
    """The figures a benchmark's verdict rests on: its gate (the time by default) and metrics marked to gate."""
    gate = (bench.get("extra_info") or {}).get("gate", TIME)
    figures = {gate} if gate != "none" else set()
    return figures | {name for name, metric in metrics_of(bench).items() if metric.gate}


def _benchmark(name: str, base: Mapping[str, Any], cur: Mapping[str, Any], base_runs: Mapping[str, list[float]],
               cur_runs: Mapping[str, list[float]], spreads: Mapping[str, Spread], policy: Policy) -> list[_Judged]:
    threshold = float((cur.get("extra_info") or {}).get("tolerance",
                                                        (base.get("extra_info") or {}).get("tolerance", policy.threshold)))
    gates = gating_figures(cur) | gating_figures(base)
    kinds = {TIME: ("s", "lower")}
    for bench in (base, cur):
        kinds.update({n: (m.unit, m.better) for n, m in metrics_of(bench).items()})
    load = payloads.read(cur, payloads.HostLoad)
    out = []
    for figure in sorted(base_runs.keys() | cur_runs.keys()):
        unit, better = kinds.get(figure, ("", "none"))
        b, c = base_runs.get(figure), cur_runs.get(figure)
        if b is None or c is None:
            gate = figure in gates and better != "none"
            verdict = "unknown" if gate else ("new" if b is None else "missing")
            note = f"a gating figure only {'this run' if b is None else 'the baseline'} has" if gate else ""
            out.append(_Judged(Row(name, figure, unit, better, statistics.fmean(b) if b else None,
                                   statistics.fmean(c) if c else None, None, verdict, note=note, gating=gate)))
        elif figure in gates and better != "none":
            out.append(_gate(name, figure, unit, better, b, c, spreads.get(figure), threshold, policy, load))
        else:
            out.append(_Judged(_informational(name, figure, unit, better, b, c, threshold, spreads.get(figure),
                                              policy)))
    return out


def _informational(name: str, figure: str, unit: str, better: str, b: list[float], c: list[float],
                   threshold: float, stored: Spread | None, policy: Policy) -> Row:
    base, cur = statistics.fmean(b), statistics.fmean(c)
    change = _relative_change(base, cur)
    if better == "none":
        counts = base.is_integer() and cur.is_integer()
        moved = abs(change) > (0.0 if counts else threshold)
        ranges = [s.range for s in (Spread.of(b), stored) if s is not None]
        if moved and not counts and ranges and max(ranges) > policy.unstable:
            # the gating rule for noisy figures: a ratio whose baseline runs already spread this much says nothing
            return Row(name, figure, unit, better, base, cur, change, "info",
                       note=f"runs spread {max(ranges):.0%} (max-min) > {policy.unstable:.0%}: too noisy to judge")
        moved = moved and (counts or _beyond_band(b, c, stored, threshold, policy))
        note = ("a count that should not change" if counts else "a figure that should stay put") if moved else ""
        return Row(name, figure, unit, better, base, cur, change, "changed" if moved else "info", note=note)
    return Row(name, figure, unit, better, base, cur, change, "info")


def _beyond_band(b: list[float], c: list[float], stored: Spread | None, threshold: float, policy: Policy) -> bool:
    """A ratio moved by more than the band a gating figure gets, ``max(threshold, k × between-run spread)``:
    a utilisation that wanders 3% between runs must not be called changed at +5.3%."""
    base, cur = statistics.fmean(b), statistics.fmean(c)
    if min(base, cur) <= 0:
        return abs(_relative_change(base, cur)) > threshold
    spread, _ = _pooled(b, c, stored)
    band = _band(spread, threshold, policy)
    return abs(math.log(cur / base)) > band


def _gate(name: str, figure: str, unit: str, better: str, b: list[float], c: list[float], stored: Spread | None,
          threshold: float, policy: Policy, load: payloads.HostLoad | None = None) -> _Judged:
    base, cur = statistics.fmean(b), statistics.fmean(c)
    change = _relative_change(base, cur)

    def row(verdict: str, note: str = "") -> Row:
        return Row(name, figure, unit, better, base, cur, change, verdict, None, note, True, None, (len(b), len(c)))

    spread, df = _pooled(b, c, stored)
    ranges = [s.range for s in (Spread.of(b), Spread.of(c), stored) if s is not None]
    if ranges and max(ranges) > policy.unstable:
        return _Judged(row("not gated", f"runs spread {max(ranges):.0%} (max-min) > {policy.unstable:.0%}: "
                                        "too noisy to gate; reported only"))
    if min(b + c) <= 0:
        return _Judged(row("unchanged" if base == cur else "unknown", "a zero or negative figure: no log scale"))
    d = statistics.fmean(math.log(v) for v in c) - statistics.fmean(math.log(v) for v in b)
    band = _band(spread, threshold, policy)
    se = spread * math.sqrt(1 / len(b) + 1 / len(c)) if spread is not None else None
    worse = d if better == "lower" else -d
    if abs(d) <= band:
        return _Judged(row("unchanged"), evidence=(df, se, band))
    if se is None or df < 1:
        return _Judged(row("unknown", "needs more runs: no between-run spread is known for this figure"),
                       evidence=(df, se, band))
    if worse > 0 and load is not None and load.busy:
        return _Judged(row("unknown", load.sentence()), evidence=(df, se, band))
    p_value = 0.0 if se == 0 else 2.0 * _t_sf(abs(d) / se, df)
    direction = "regressed" if worse > 0 else "improved"
    return _Judged(row(direction), p_value, (df, se, band))


def _band(spread: float | None, threshold: float, policy: Policy) -> float:
    """How far (in log) a figure may move and still be unchanged: ``max(threshold, k × between-run spread)``."""
    return max(math.log1p(threshold), policy.k * spread) if spread is not None else math.log1p(threshold)


def _pooled(b: list[float], c: list[float], stored: Spread | None) -> tuple[float | None, int]:
    """Between-run SD of the log values pooled over the sides with several runs, else the stored spread."""
    sides = [[math.log(v) for v in side] for side in (b, c) if len(side) > 1 and min(side) > 0]
    df = sum(len(side) - 1 for side in sides)
    if df:
        return math.sqrt(sum(statistics.variance(side) * (len(side) - 1) for side in sides) / df), df
    if stored is not None and stored.df > 0:
        return stored.sd, stored.df
    return None, 0


def _holm(judged: list[_Judged], policy: Policy) -> list[Row]:
    """Holm's step-down correction over every gating figure compared; then each gating row's MDE."""
    m = sum(1 for j in judged if j.row.gating and j.row.verdict != "not gated")
    tested = sorted((j for j in judged if j.p_value is not None), key=lambda j: j.p_value or 0.0)
    significant, still = set(), True
    for i, j in enumerate(tested):
        still = still and (j.p_value or 0.0) <= policy.alpha / (m - i)
        if still:
            significant.add(id(j))
    rows = []
    for j in judged:
        row = j.row
        if j.evidence is not None:
            df, se, band = j.evidence
            mde = (None if se is None or df < 1
                   else max(math.expm1(band), math.expm1(_t_isf(policy.alpha / (2 * m), df) * se)))
            row = dataclasses.replace(row, mde=mde)
        if j.p_value is not None:
            verdict = row.verdict if id(j) in significant else "unknown"
            note = "" if id(j) in significant else (f"beyond the band but not significant after correcting for "
                                                     f"{m} figures (p={j.p_value:.2g}); more runs decide")
            row = dataclasses.replace(row, verdict=verdict, p_value=j.p_value, note=note)
        rows.append(row)
    return rows


def _t_sf(t: float, df: int) -> float:
    from scipy.stats import t as student  # ~1 s to import: only when a figure moved beyond its band

    return float(student.sf(t, df))


def _t_isf(p: float, df: int) -> float:
    from scipy.stats import t as student

    return float(student.isf(p, df))


def _relative_change(base: float, cur: float) -> float:
    if base == 0:
        return 0.0 if cur == 0 else math.copysign(math.inf, cur)
    return cur / base - 1.0


def _fingerprint_changes(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[tuple[str, Any, Any], ...]:
    old = perfkit_info(baseline).get("fingerprint", {})
    new = perfkit_info(current).get("fingerprint", {})
    # a field only one side recorded (added to the fingerprint after the older run) is not a change
    return tuple((f, old[f], new[f]) for f in FINGERPRINT_FIELDS if f in old and f in new and old[f] != new[f])


def ceiling_of(results: Mapping[str, Any], key: str) -> float | None:
    """A ceiling of the machine that produced ``results``: the median of its runs' measurements where the file
    holds several (one run of a 2-vCPU VM copied at 74 GB/s, the other eight at 34-47), else the one measured,
    else its datasheet figure."""
    info = perfkit_info(results)
    over_runs = [v for figures in (info.get("runs") or {}).values() for v in figures.get(key, [])]
    if over_runs:
        return float(statistics.median(over_runs))
    measured = info.get("ceilings", {}).get(key)
    if measured is not None:
        return float(measured)
    spec = datasheet.by_key(info.get("fingerprint", {}).get("datasheet_key") or "")
    return spec.ceiling(key) if spec else None


def _hardware_row(name: str, base: Mapping[str, Any], cur: Mapping[str, Any], base_runs: Figures,
                  cur_runs: Figures, baseline: Mapping[str, Any], current: Mapping[str, Any]) -> HardwareRow:
    """One benchmark across two machines, from the mean over each side's runs."""
    now = statistics.fmean(cur_runs[TIME])
    speedup = statistics.fmean(base_runs[TIME]) / now if now > 0 else math.inf
    # only where both runs name the ceiling they follow (a benchmark names none where its work is not that
    # ceiling's, as the timer's copy on a CPU), and each side its own: a convolution bound by TF32 on a GPU is
    # bound by fp32 on a CPU
    base_bound, cur_bound = ((side.get("extra_info") or {}).get("bound") for side in (base, cur))
    if not base_bound or not cur_bound:
        return HardwareRow(name, speedup, None, None)
    old, new = ceiling_of(baseline, base_bound), ceiling_of(current, cur_bound)
    expected = new / old if old and new else None
    if expected is not None and base_bound in base_runs and cur_bound in cur_runs:
        # a benchmark that measures the ceiling itself compares by that rate, not its time: its size may differ
        # by device (the quick profile copies 1 GiB on a GPU and 64 MiB on a CPU)
        speedup = expected
    shown = cur_bound if cur_bound == base_bound else f"{base_bound} -> {cur_bound}"
    return HardwareRow(name, speedup, shown, expected)


def parse_threshold(text: str) -> float:
    """'5%' or '0.05' → 0.05; anything else is a usage error that shows the accepted forms."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise UsageError(f"threshold {text!r} is not a number; write it as 5% or 0.05") from None
    if not raw.endswith("%") and value >= 1:
        raise UsageError(f"threshold {text!r} is ambiguous; write 5% or 0.05")
    if not 0 <= value < 10 or math.isnan(value):
        raise UsageError(f"threshold {text!r} is out of range: a tolerance is a size, not a direction; "
                         "use a fraction such as 5% or 0.05")
    return value
