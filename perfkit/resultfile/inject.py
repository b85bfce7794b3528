"""A testing aid: pretend chosen benchmarks got slower, to check that the verdict catches it.

``PERFKIT_INJECT_SLOWDOWN="PATTERN=FACTOR[,PATTERN=FACTOR...]"`` (globs of benchmark full names, * and ? as
wildcards and brackets literal, e.g. ``*test_layer[conv-forward]=1.10``) scales what the matching benchmarks
measured as the run writes its results: every measured time (pytest-benchmark's stats and metrics in seconds
or SM cycles, and a time over the host's own reference; not a model's prediction, which is better neither
way, nor the host's reference) by FACTOR, every rate that is better higher (GB/s, TFLOP/s, images/s) by
1/FACTOR. The benchmark still runs for real, so the comparison sees a
run FACTOR slower than the code made it, with the machine's real run-to-run noise around it. Each scaled
entry says so in ``extra_info["injected_slowdown"]``. The variable is inherited by ``--perfkit-confirm``'s
re-runs, as a real slowdown in the code would be.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from perfkit.errors import UsageError
from perfkit.resultfile.figures import (
    FIRST_TOUCH_S,
    HOST_COPY_S,
    LAUNCH_US,
    LAUNCHES_PER_STEP,
    ONE_SM_COPY_S,
    OVER_FIRST_TOUCH,
    OVER_HOST_COPY,
    OVER_ONE_SM_COPY,
    TIME_UNITS,
)
from perfkit.resultfile.metrics import INJECTED_KEY, METRICS_KEY
from perfkit.resultfile.model import name_matches

ENV = "PERFKIT_INJECT_SLOWDOWN"
_TIME_STATS = (
    "min",
    "max",
    "mean",
    "stddev",
    "median",
    "iqr",
    "q1",
    "q3",
    "iqr_outliers",
    "total",
    "ld15iqr",
    "hd15iqr",
)
_TIME_UNITS = (*TIME_UNITS, "Mcycles")  # SM cycles per call scale as the time does
#: A time of the machine's, timed beside the code as its reference: the code's slowdown leaves it alone
_MACHINE_REFERENCES = (HOST_COPY_S.name, LAUNCH_US.name, FIRST_TOUCH_S.name, ONE_SM_COPY_S.name)
#: The code's time over such a reference: it scales as the time does
_TIMES_OVER_REFERENCE = (OVER_HOST_COPY.name, LAUNCHES_PER_STEP.name, OVER_FIRST_TOUCH.name,
                         OVER_ONE_SM_COPY.name)


def rules(environ: Mapping[str, str] = os.environ) -> list[tuple[str, float]]:
    """(pattern, factor) pairs from the environment; a malformed entry is a usage error that shows the
    form."""
    text = environ.get(ENV, "").strip()
    out = []
    for entry in filter(None, (e.strip() for e in text.split(","))):
        pattern, _, factor = entry.rpartition("=")
        try:
            value = float(factor)
        except ValueError:
            value = 0.0
        if not pattern or value <= 0:
            raise UsageError(
                f"{ENV}={text!r}: write PATTERN=FACTOR[,PATTERN=FACTOR], e.g. '*test_copy_bandwidth*=1.1'"
            )
        out.append((pattern, value))
    return out


def unmatched(names: Iterable[str], environ: Mapping[str, str] = os.environ) -> list[str]:
    """The rules' patterns that match none of ``names`` (a run's benchmarks): a slowdown the user meant to
    write and that went nowhere, which the run says rather than judging a night with nothing in it."""
    present = list(names)
    return [pattern for pattern, _ in rules(environ) if not any(name_matches(n, pattern) for n in present)]


def apply(bench: MutableMapping[str, Any], environ: Mapping[str, str] = os.environ) -> None:
    """Scale one benchmark entry in place if a rule matches it (once: a scaled entry is left alone)."""
    extra = bench.setdefault("extra_info", {})
    if INJECTED_KEY in extra:
        return
    factor = next(
        (f for pattern, f in rules(environ) if name_matches(bench.get("fullname", ""), pattern)), None
    )
    if factor is None:
        return
    stats = bench.get("stats") or {}
    for key in _TIME_STATS:
        if isinstance(stats.get(key), (int, float)):
            stats[key] *= factor
    if stats.get("data"):
        stats["data"] = [x * factor for x in stats["data"]]
    if stats.get("ops"):
        stats["ops"] /= factor
    for name, metric in (extra.get(METRICS_KEY) or {}).items():
        better = metric.get("better")
        scale = (
            None if better == "none" or name in _MACHINE_REFERENCES  # a prediction, the machine's reference
            else factor if metric.get("unit") in _TIME_UNITS or name in _TIMES_OVER_REFERENCE
            else (1 / factor if better == "higher" and "/s" in metric.get("unit", "") else None)
        )
        if scale is not None:
            metric["value"] *= scale
            if "samples" in metric:
                metric["samples"] = [x * scale for x in metric["samples"]]
    extra[INJECTED_KEY] = factor
