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
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from perfkit.errors import BaselineError, UsageError
from perfkit.resultfile.fingerprint import DeviceKind
from perfkit.resultfile.payloads import Record

Better = Literal["lower", "higher", "none"]
BETTER_VALUES: tuple[str, ...] = ("lower", "higher", "none")
#: Where a benchmark entry's ``extra_info`` keeps its metrics, their absences, and the context the judge
#: reads.
METRICS_KEY, ABSENT_KEY = "metrics", "metrics_absent"
GATE_KEY, BOUND_KEY, TOLERANCE_KEY, INFORMATIONAL_KEY = "gate", "bound", "tolerance", "informational"
GPU_BOUND_KEY, BETWEEN_HOSTS_KEY = "gpu_bound", "between_hosts"
CONTEXT_KEYS = (GATE_KEY, BOUND_KEY, TOLERANCE_KEY, INFORMATIONAL_KEY, GPU_BOUND_KEY, BETWEEN_HOSTS_KEY)
#: ``extra_info`` of an entry a testing aid slowed down: the factor (perfkit.resultfile.inject).
INJECTED_KEY = "injected_slowdown"
#: ``extra_info`` of an entry: the version of the method each figure was measured by, for the figures a
#: :class:`Method` after the first measures; a figure it does not name was measured by version 1.
METHODS_KEY = "methods"
#: The work a benchmark did as the roofline model counts it (perfkit.verdict.expected.Work.to_json), recorded
#: when its run was read, so that a comparison across hardware reads it instead of counting it
WORK_KEY = "work"
#: ``extra_info["gate"]`` of a benchmark that gates on no figure of its own.
GATE_NONE = "none"


@dataclass(frozen=True)
class Metric:
    """One declared result; ``value`` defaults to the median of ``samples``."""

    value: float
    unit: str
    better: Better
    samples: tuple[float, ...] = field(default=())
    gate: bool = False  # a figure the benchmark's verdict rests on (see perfkit.verdict.judge)
    exact: bool = True  # a count the code alone decides (MetricSpec.exact)

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
        if not self.exact:
            out["exact"] = False
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
                bool(raw.get("exact", True)),
            )
        except (KeyError, TypeError, ValueError, UsageError) as exc:
            raise BaselineError(
                f"metric {name!r} is malformed ({exc}); re-run the benchmark to rewrite it"
            ) from exc


@dataclass(frozen=True)
class MetricSpec:
    """A declared figure: its name (the key of every stored history), unit and which way is better.

    ``gate``: the benchmark's verdict also rests on this figure (one that does not follow from its time, such
    as an allocator peak). ``exact``: a count the code alone decides, so any move is a change; False for one
    read off the machine (hardware counters, what fits in the card's free memory), which moves a little
    between machines and is judged as a figure that should stay put. perfkit's own figures are declared in
    perfkit.resultfile.figures.
    """

    name: str
    unit: str
    better: Better
    gate: bool = False
    exact: bool = True

    def __post_init__(self) -> None:
        if self.better not in BETTER_VALUES:
            raise UsageError(
                f"metric {self.name!r}: 'better' must be one of {BETTER_VALUES}, not {self.better!r}"
            )


@dataclass(frozen=True)
class Method:
    """A way of measuring figures that replaced the way before it on purpose, under the same names: values
    measured two ways are never judged against each other, and a history charts them as separate series.

    ``version``: 2, 3, ... (every figure is measured by version 1 until a method says otherwise); ``how``:
    what it measures, in a few words; ``since``: the first run measured this way (ISO 8601), against which
    the entries of files written before results recorded their versions are dated
    (perfkit.resultfile.migrations); ``figures``: the figures it measures, those computed from them included;
    ``benchmarks``: the ids it applies to, or their start (a family); ``device``: the kind of device whose
    runs it applies to. The methods are declared in perfkit.resultfile.figures; a benchmark says which it
    measured by (:meth:`MetricRecorder.measured_by`), since that can depend on the run (a GPU's L2 size, CPU
    or GPU).
    """

    version: int
    how: str
    since: str
    figures: tuple[str, ...]
    benchmarks: tuple[str, ...]
    device: DeviceKind = "cuda"

    def __post_init__(self) -> None:
        if self.version < 2 or moment(self.since) is None:
            raise UsageError(f"a method after the first has a version from 2 up and the ISO date of its "
                             f"first run (such as 2026-11-23T13:45:58+00:00), not version {self.version} and "
                             f"{self.since!r}")

    def applies_to(self, benchmark: str, device: str) -> bool:
        """Whether it is the way ``benchmark`` measures its figures on a ``device`` ("cuda", "cpu")."""
        return device == self.device and benchmark.startswith(self.benchmarks)

    def covers(self, when: str) -> bool:
        """Whether a run of ``when`` (ISO 8601; "" where unknown) was measured this way: at or after
        ``since``."""
        then, since = moment(when), moment(self.since)
        return then is not None and since is not None and then >= since


def moment(when: str) -> datetime | None:
    """An ISO 8601 date and time (UTC where it names no zone), or None where it is none."""
    try:  # Python 3.10 reads no "Z" for UTC
        read = datetime.fromisoformat(when[:-1] + "+00:00" if when.endswith("Z") else when)
    except ValueError:
        return None
    return read if read.tzinfo is not None else read.replace(tzinfo=timezone.utc)


class MetricRecorder:
    """Writes metrics into a pytest-benchmark ``extra_info`` dict (what the ``perfkit_metrics`` fixture hands
    out)."""

    def __init__(self, extra_info: MutableMapping[str, Any]) -> None:
        self._extra_info = extra_info

    def record(
        self, spec: MetricSpec, value: float | None = None, samples: Sequence[float] | None = None,
        exact: bool | None = None,
    ) -> Metric:
        """The figure ``spec`` declares, from one value or from samples (their median, unless ``value`` is
        given); ``exact`` where this run's count is decided otherwise than ``spec`` says (a search under the
        card's free memory rather than a cap)."""
        exact = spec.exact if exact is None else exact
        if samples:
            metric = Metric.from_samples(samples, spec.unit, spec.better)
            metric = Metric(
                metric.value if value is None else float(value),
                spec.unit,
                spec.better,
                metric.samples,
                spec.gate,
                exact,
            )
        elif value is not None:
            metric = Metric(float(value), spec.unit, spec.better, gate=spec.gate, exact=exact)
        else:
            raise UsageError(f"metric {spec.name!r} needs a value or samples")
        self._extra_info.setdefault(METRICS_KEY, {})[spec.name] = metric.to_json()
        self._extra_info.get(ABSENT_KEY, {}).pop(spec.name, None)
        return metric

    def absent(self, spec: MetricSpec, reason: str) -> None:
        """Record why a metric could not be measured here (never a zero in its place)."""
        self._extra_info.setdefault(ABSENT_KEY, {})[spec.name] = reason
        self._extra_info.get(METRICS_KEY, {}).pop(spec.name, None)

    def gate_on(self, figure: MetricSpec) -> None:
        """Rest the benchmark's verdict on ``figure`` instead of its time, where the time is not the figure
        worth gating (a whole program step dominated by host copies)."""
        self._extra_info[GATE_KEY] = figure.name

    def informational(self, reason: str) -> None:
        """Gate on no figure of this benchmark, on purpose and saying why (FLOP counting: its time is Python
        on a meta device; its counts are judged as counts). Every other benchmark gates."""
        if not reason.strip():
            raise UsageError("an informational benchmark says why it does not gate")
        self._extra_info[GATE_KEY] = GATE_NONE
        self._extra_info[INFORMATIONAL_KEY] = reason

    def bound_by(self, ceiling: MetricSpec) -> None:
        """Across hardware this benchmark's time should follow ``ceiling`` (one of figures.CEILINGS)."""
        self._extra_info[BOUND_KEY] = ceiling.name

    def gpu_bound(self) -> None:
        """This benchmark's gating figure is GPU work with no single ceiling to follow across hardware (a
        training step, an allocator peak, a grid kernel): it reproduces like a bound one, so the judge
        holds it to the GPU-bound minimum effect (3%) rather than the host-bound one."""
        self._extra_info[GPU_BOUND_KEY] = True

    def tolerance(self, fraction: float) -> None:
        """The smallest change of this benchmark worth a verdict, instead of the policy's threshold."""
        if not 0 < fraction < 1:
            raise UsageError(f"a tolerance is a fraction between 0 and 1, such as 0.05, not {fraction!r}")
        self._extra_info[TOLERANCE_KEY] = float(fraction)

    def noise_between_hosts(self, reason: str) -> None:
        """This benchmark's gating figure differs between hosts of one model by more than its runs on one
        host do, for a ``reason`` measured and said (a driver's page work, a core's memory path), and cannot
        be cut: its minimum effect on a host its baseline never ran on widens to what one run can see there
        (perfkit.verdict.machine_spread), said beside its verdict, rather than leaving it blind."""
        if not reason.strip():
            raise UsageError("a figure whose noise lies between hosts says why")
        self._extra_info[BETWEEN_HOSTS_KEY] = reason

    def payload(self, record: Record) -> None:
        """The family's typed record (perfkit.resultfile.payloads), which the report reads back."""
        self._extra_info[record.TAG] = record.to_json()

    def measured_by(self, method: Method) -> None:
        """This benchmark measured the figures ``method`` measures by its version (one of
        perfkit.resultfile.figures' methods): a comparison or a trend never sets them against values measured
        another way."""
        self._extra_info.setdefault(METHODS_KEY, {}).update(dict.fromkeys(method.figures, method.version))

    def info(self, key: str, value: Any) -> None:
        """Context that is not a metric and that no verdict reads (sizes, what ran out first, why a kernel
        summary is missing)."""
        if key in (*CONTEXT_KEYS, METHODS_KEY):
            raise UsageError(f"{key!r} is set through its own method (gate_on, bound_by, gpu_bound, "
                             f"tolerance, informational, noise_between_hosts, measured_by)")
        self._extra_info[key] = value


def tolerance_problem(value: object) -> str | None:
    """What is wrong with a stored minimum effect (None where nothing): a fraction between 0 and 1 (0 or NaN
    gave NaN MDEs, a negative one a minimum no change could meet)."""
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1):
        return None
    return f"is {value!r}, not a fraction between 0 and 1 (its minimum effect, such as 0.05)"


def relative_iqr(values: Sequence[float]) -> float:
    """IQR over median: perfkit's noise figure (above ~10% a comparison is called noisy)."""
    if len(values) < 2:
        return 0.0
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return (q3 - q1) / median if median > 0 else 0.0


def rates(amount: float, seconds: Sequence[float], scale: float = 1.0) -> list[float]:
    """``amount`` per second for each timed repetition, in units of ``scale`` (1e9: GB/s, 1e12: TFLOP/s)."""
    return [amount / s / scale for s in seconds]
