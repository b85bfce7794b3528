"""Comparison of two result sets as a pure function: no I/O, no printing (``report`` renders it).

A metric regresses when it is worse than the baseline by more than its tolerance (default 5%,
``extra_info["tolerance"]`` overrides per benchmark) AND, where both sides have samples, a
Mann-Whitney U test calls the difference significant. With fewer than ``min_samples`` on a
side perfkit refuses to call significance (as google/benchmark's compare.py does) and says
"unconfirmed". A side whose IQR/median exceeds the noise limit makes the verdict "noisy".
Figures with no better direction (``better: none``) are "changed" when they move: integer
counts (FLOPs, parameters) at all, other figures (ratios) beyond the tolerance.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfkit.errors import UsageError
from perfkit.results import datasheet
from perfkit.results.baselines import hardware_id_of, perfkit_info
from perfkit.results.metrics import metrics_of, relative_iqr

VERDICTS: tuple[str, ...] = (
    "regressed", "improved", "unchanged", "noisy", "unconfirmed", "changed", "new", "missing",
)
#: Fingerprint fields whose change is shown beside the verdicts.
FINGERPRINT_FIELDS: tuple[str, ...] = (
    "gpu_name", "gpu_count", "driver", "cuda", "cudnn", "torch", "torchvision", "numba", "numba_cuda",
    "python", "cpu_model",
)


@dataclass(frozen=True)
class Policy:
    threshold: float = 0.05
    noise: float = 0.10
    alpha: float = 0.05
    min_samples: int = 5


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


@dataclass(frozen=True)
class HardwareRow:
    """Across machines: the measured speedup beside what the relevant ceiling ratio predicts."""

    benchmark: str
    speedup: float
    bound: str | None
    expected: float | None


@dataclass(frozen=True)
class Comparison:
    baseline_id: str
    current_id: str
    rows: tuple[Row, ...]
    fingerprint_changes: tuple[tuple[str, Any, Any], ...] = ()
    geomean_time_ratio: float | None = None
    hardware_rows: tuple[HardwareRow, ...] = field(default=())

    @property
    def same_hardware(self) -> bool:
        return self.baseline_id == self.current_id

    @property
    def regressions(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.verdict == "regressed")

    def counts(self) -> dict[str, int]:
        return {v: n for v in VERDICTS if (n := sum(r.verdict == v for r in self.rows))}


@dataclass(frozen=True)
class _Observation:
    value: float
    samples: tuple[float, ...]
    distribution: bool  # True: repeated measurements of one quantity; False: a single figure

    @property
    def noise(self) -> float:
        return relative_iqr(self.samples)


def compare(baseline: Mapping[str, Any], current: Mapping[str, Any], policy: Policy = Policy()) -> Comparison:
    """Compare every benchmark's time and declared metrics in ``current`` against ``baseline``."""
    base = {b["fullname"]: b for b in baseline["benchmarks"]}
    cur = {b["fullname"]: b for b in current["benchmarks"]}
    rows: list[Row] = []
    for name in sorted(base.keys() | cur.keys()):
        if name not in cur:
            rows.append(Row(name, "time", "s", "lower", _time(base[name]).value, None, None, "missing"))
        elif name not in base:
            rows.append(Row(name, "time", "s", "lower", None, _time(cur[name]).value, None, "new"))
        else:
            rows.extend(_compare_benchmark(name, base[name], cur[name], policy))
    common = sorted(base.keys() & cur.keys())
    ratios = [_time(cur[n]).value / _time(base[n]).value for n in common if _time(base[n]).value > 0]
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
    base_id, cur_id = hardware_id_of(baseline), hardware_id_of(current)
    hardware_rows = () if base_id == cur_id else tuple(
        _hardware_row(n, base[n], cur[n], baseline, current) for n in common
    )
    return Comparison(base_id, cur_id, tuple(rows), _fingerprint_changes(baseline, current), geomean, hardware_rows)


def _compare_benchmark(name: str, base: Mapping[str, Any], cur: Mapping[str, Any], policy: Policy) -> list[Row]:
    tolerance = float(cur.get("extra_info", {}).get("tolerance", base.get("extra_info", {}).get("tolerance",
                                                                                             policy.threshold)))
    rows = [_judge(name, "time", "s", "lower", _time(base), _time(cur), tolerance, policy)]
    base_metrics, cur_metrics = metrics_of(base), metrics_of(cur)
    for metric in sorted(base_metrics.keys() | cur_metrics.keys()):
        b, c = base_metrics.get(metric), cur_metrics.get(metric)
        if b is None or c is None:
            known = c if b is None else b
            if known is not None:
                rows.append(Row(name, metric, known.unit, known.better, b.value if b else None,
                                c.value if c else None, None,
                                "new" if b is None else "missing"))
            continue
        rows.append(_judge(name, metric, c.unit, c.better, _metric(b), _metric(c), tolerance, policy))
    return rows


def _time(bench: Mapping[str, Any]) -> _Observation:
    stats = bench["stats"]
    data = tuple(float(x) for x in stats.get("data") or ())
    return _Observation(float(stats["median"]), data, True)


def _metric(metric: Any) -> _Observation:
    return _Observation(metric.value, metric.samples, len(metric.samples) > 1)


def _judge(bench: str, metric: str, unit: str, better: str, base: _Observation, cur: _Observation,
           tolerance: float, policy: Policy) -> Row:
    change = _relative_change(base.value, cur.value)

    def row(verdict: str, p_value: float | None = None, note: str = "") -> Row:
        return Row(bench, metric, unit, better, base.value, cur.value, change, verdict, p_value, note)

    if better == "none":
        counts = base.value.is_integer() and cur.value.is_integer()
        limit = 0.0 if counts else tolerance
        moved = abs(change) > limit
        note = "a count that should not change" if counts else "a figure that should stay put"
        return row("changed" if moved else "unchanged", note=note if moved else "")
    noisiest = max(base.noise, cur.noise)
    if noisiest > policy.noise:
        return row("noisy", note=f"IQR/median {noisiest:.0%} > {policy.noise:.0%}")
    worse = change if better == "lower" else -change
    if abs(worse) <= tolerance:
        return row("unchanged")
    direction = "regressed" if worse > 0 else "improved"
    if not (base.distribution and cur.distribution):
        return row(direction, note="single values: no significance test")
    n = min(len(base.samples), len(cur.samples))
    if n < policy.min_samples:
        return row("unconfirmed", note=f"too few samples ({n}) to test significance; need {policy.min_samples}")
    from scipy.stats import mannwhitneyu  # ~1 s to import: only when a change beyond tolerance needs the test

    p_value = float(mannwhitneyu(base.samples, cur.samples, alternative="two-sided").pvalue)
    if p_value < policy.alpha:
        return row(direction, p_value)
    return row("unconfirmed", p_value, f"not significant (p={p_value:.3f})")


def _relative_change(base: float, cur: float) -> float:
    if base == 0:
        return 0.0 if cur == 0 else math.copysign(math.inf, cur)
    return cur / base - 1.0


def _fingerprint_changes(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[tuple[str, Any, Any], ...]:
    old = perfkit_info(baseline).get("fingerprint", {})
    new = perfkit_info(current).get("fingerprint", {})
    return tuple((f, old.get(f), new.get(f)) for f in FINGERPRINT_FIELDS if old.get(f) != new.get(f))


def ceiling_of(results: Mapping[str, Any], key: str) -> float | None:
    """A ceiling of the machine that produced ``results``: measured if stored, else its datasheet figure."""
    info = perfkit_info(results)
    measured = info.get("ceilings", {}).get(key)
    if measured is not None:
        return float(measured)
    spec = datasheet.by_key(info.get("fingerprint", {}).get("datasheet_key") or "")
    return spec.ceiling(key) if spec else None


def _hardware_row(name: str, base: Mapping[str, Any], cur: Mapping[str, Any],
                  baseline: Mapping[str, Any], current: Mapping[str, Any]) -> HardwareRow:
    speedup = _time(base).value / _time(cur).value
    bound = cur.get("extra_info", {}).get("bound") or base.get("extra_info", {}).get("bound")
    expected = None
    if bound:
        old, new = ceiling_of(baseline, bound), ceiling_of(current, bound)
        expected = new / old if old and new else None
    return HardwareRow(name, speedup, bound, expected)


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
        raise UsageError(f"threshold {text!r} is out of range; use a fraction such as 5% or 0.05")
    return value
