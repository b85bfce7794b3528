"""Declared metrics: every non-time result of a benchmark, with its unit and which way is better.

The JSON contract, stable for dashboards (``SCHEMA_VERSION`` guards it)::

    extra_info["metrics"][name] = {
        "value": float,                 # the headline figure (median where there are samples)
        "unit": str,                    # "GB/s", "TFLOP/s", "MiB", "ratio", ...
        "better": "lower" | "higher" | "none",   # "none": a count that should not change
        "samples": [float, ...],        # present only when there are several
    }

Metrics a benchmark could not measure go into ``extra_info["metrics_absent"][name] = reason``
rather than being recorded as zero.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from perfkit.errors import BaselineError, UsageError
from perfkit.results.payloads import Record

Better = Literal["lower", "higher", "none"]
BETTER_VALUES: tuple[str, ...] = ("lower", "higher", "none")


@dataclass(frozen=True)
class Metric:
    """One declared result; ``value`` defaults to the median of ``samples``."""

    value: float
    unit: str
    better: Better
    samples: tuple[float, ...] = field(default=())
    gate: bool = False  # a figure the benchmark's verdict rests on (see perfkit.results.compare)

    def __post_init__(self) -> None:
        if self.better not in BETTER_VALUES:
            raise UsageError(f"metric 'better' must be one of {BETTER_VALUES}, not {self.better!r}")
        if not math.isfinite(self.value):
            raise UsageError(f"metric value must be a finite number, not {self.value!r}")

    @classmethod
    def from_samples(cls, samples: Sequence[float], unit: str, better: Better) -> Metric:
        if not samples:
            raise UsageError("a metric from samples needs at least one sample")
        floats = tuple(float(s) for s in samples)
        return cls(statistics.median(floats), unit, better, floats if len(floats) > 1 else ())

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": float(self.value), "unit": self.unit, "better": self.better}
        if len(self.samples) > 1:
            out["samples"] = [float(s) for s in self.samples]
        if self.gate:
            out["gate"] = True
        return out

    @classmethod
    def from_json(cls, name: str, raw: Any) -> Metric:
        try:
            return cls(
                float(raw["value"]),
                str(raw["unit"]),
                raw["better"],
                tuple(float(s) for s in raw.get("samples", ())),
                bool(raw.get("gate", False)),
            )
        except (KeyError, TypeError, ValueError, UsageError) as exc:
            raise BaselineError(f"metric {name!r} is malformed ({exc}); re-run the benchmark to rewrite it") from exc


class MetricRecorder:
    """Writes metrics into a pytest-benchmark ``extra_info`` dict (what the ``perfkit_metrics`` fixture hands out)."""

    def __init__(self, extra_info: MutableMapping[str, Any]) -> None:
        self._extra_info = extra_info

    def record(
        self,
        name: str,
        value: float | None = None,
        unit: str = "",
        better: Better = "none",
        samples: Sequence[float] | None = None,
        gate: bool = False,
    ) -> Metric:
        """``gate=True``: the benchmark's verdict also rests on this figure (one that does not follow from
        its time, such as an allocator peak)."""
        if samples:
            metric = Metric.from_samples(samples, unit, better)
            metric = Metric(metric.value if value is None else float(value), unit, better, metric.samples, gate)
        elif value is not None:
            metric = Metric(float(value), unit, better, gate=gate)
        else:
            raise UsageError(f"metric {name!r} needs a value or samples")
        self._extra_info.setdefault("metrics", {})[name] = metric.to_json()
        self._extra_info.get("metrics_absent", {}).pop(name, None)
        return metric

    def absent(self, name: str, reason: str) -> None:
        """Record why a metric could not be measured here (never a zero in its place)."""
        self._extra_info.setdefault("metrics_absent", {})[name] = reason
        self._extra_info.get("metrics", {}).pop(name, None)

    def gate_on(self, figure: str) -> None:
        """Rest the benchmark's verdict on ``figure`` (a metric name, or ``"none"``) instead of its time, where
        the time is not the figure worth gating (a whole program step dominated by host copies)."""
        self._extra_info["gate"] = figure

    def payload(self, record: Record) -> None:
        """The family's typed record (perfkit.results.payloads), which the report reads back."""
        self._extra_info[record.TAG] = record.to_json()

    def info(self, key: str, value: Any) -> None:
        """Context that is not a metric (sizes, dtype, the ceiling a percentage refers to)."""
        self._extra_info[key] = value


def relative_iqr(values: Sequence[float]) -> float:
    """IQR over median: perfkit's noise figure (above ~10% a comparison is called noisy)."""
    if len(values) < 2:
        return 0.0
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return (q3 - q1) / median if median > 0 else 0.0


def metrics_of(benchmark: Mapping[str, Any]) -> dict[str, Metric]:
    """The declared metrics of one benchmark entry of a pytest-benchmark JSON."""
    raw = (benchmark.get("extra_info") or {}).get("metrics") or {}
    if not isinstance(raw, Mapping):
        raise BaselineError(f"benchmark {benchmark.get('fullname')!r}: extra_info.metrics is not an object")
    return {name: Metric.from_json(name, value) for name, value in raw.items()}


def value_of(benchmark: Mapping[str, Any], name: str) -> float | None:
    """One declared metric's headline value, or None where the benchmark did not record it."""
    metric = metrics_of(benchmark).get(name)
    return None if metric is None else metric.value


def rates(amount: float, seconds: Sequence[float], scale: float = 1.0) -> list[float]:
    """``amount`` per second for each timed repetition, in units of ``scale`` (1e9: GB/s, 1e12: TFLOP/s)."""
    return [amount / s / scale for s in seconds]
