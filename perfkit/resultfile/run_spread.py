"""The run as the unit of replication: each run's median of every figure, and the spread between runs.

Samples inside one run are not independent replicates of what moves between runs (process start,
CUDA context, clocks, page placement, host CPU, which physical GPU), so a verdict compares run
medians (Kalibera & Jones, ISMM'13). A baseline keeps, per benchmark and figure, the value of every
run it was built from (``machine_info["perfkit"]["runs"]``) and the spread they show
(``machine_info["perfkit"]["noise"]``), so a later comparison of two single runs of that hardware
can still use it.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping

from perfkit.resultfile.model import Figures, ResultSet, Spread


def spread_of(values: Iterable[float]) -> Spread | None:
    """The spread of run values; None for fewer than two runs or a figure that is not positive (logs need
    positive values)."""
    values = [float(v) for v in values]
    if len(values) < 2 or min(values) <= 0:
        return None
    logs = [math.log(v) for v in values]
    return Spread(
        statistics.stdev(logs), (max(values) - min(values)) / statistics.median(values), len(values)
    )


def combine(results: Iterable[ResultSet]) -> dict[str, Figures]:
    """The runs of several result sets, benchmark by benchmark (a benchmark missing from a run has fewer)."""
    out: dict[str, Figures] = {}
    for one in results:
        for name, figures in one.runs().items():
            mine = out.setdefault(name, {})
            for fig, values in figures.items():
                mine.setdefault(fig, []).extend(values)
    return out


def noise(runs: Mapping[str, Mapping[str, list[float]]]) -> dict[str, dict[str, Spread]]:
    """Every figure's between-run spread (figures seen in one run only are left out)."""
    out: dict[str, dict[str, Spread]] = {}
    for name, figures in runs.items():
        for fig, values in figures.items():
            spread = spread_of(values)
            if spread is not None:
                out.setdefault(name, {})[fig] = spread
    return out
