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
from dataclasses import dataclass
from typing import Any

from perfkit.errors import BaselineError
from perfkit.results.metrics import metrics_of

#: figure -> one value per run
Figures = dict[str, list[float]]
TIME = "time"


@dataclass(frozen=True)
class Spread:
    """Between-run spread of one figure: SD of the log of run values (≈ relative SD) and (max-min)/median."""

    sd: float
    range: float
    runs: int

    @property
    def df(self) -> int:
        return self.runs - 1

    def to_json(self) -> dict[str, Any]:
        return {"sd": self.sd, "range": self.range, "runs": self.runs}

    @classmethod
    def of(cls, values: Iterable[float]) -> Spread | None:
        """None for fewer than two runs or a figure that is not positive (logs need positive values)."""
        values = [float(v) for v in values]
        if len(values) < 2 or min(values) <= 0:
            return None
        logs = [math.log(v) for v in values]
        return cls(statistics.stdev(logs), (max(values) - min(values)) / statistics.median(values), len(values))


def figures_of(bench: Mapping[str, Any]) -> dict[str, float]:
    """One run's value of every figure of a benchmark entry: its median time and each metric's value."""
    out = {TIME: float(bench["stats"]["median"])}
    out.update({name: metric.value for name, metric in metrics_of(bench).items()})
    return out


def runs_of(results: Mapping[str, Any]) -> dict[str, Figures]:
    """Per benchmark, the values of each figure over every run the result set stands for.

    A baseline built from several runs stores them; a plain run file stands for one run.
    """
    stored = (results.get("machine_info") or {}).get("perfkit", {}).get("runs")
    out: dict[str, Figures] = {}
    for bench in results.get("benchmarks", []):
        name = bench["fullname"]
        kept = (stored or {}).get(name)
        out[name] = ({fig: [float(v) for v in values] for fig, values in kept.items()} if kept
                     else {fig: [value] for fig, value in figures_of(bench).items()})
        if not all(math.isfinite(v) for values in out[name].values() for v in values):
            raise BaselineError(f"{name}: a stored run value is not a finite number; re-save the baseline from "
                                "its result files")
    return out


def combine(results: Iterable[Mapping[str, Any]]) -> dict[str, Figures]:
    """The runs of several result sets, benchmark by benchmark (a benchmark missing from a run has fewer)."""
    out: dict[str, Figures] = {}
    for one in results:
        for name, figures in runs_of(one).items():
            mine = out.setdefault(name, {})
            for fig, values in figures.items():
                mine.setdefault(fig, []).extend(values)
    return out


def noise(runs: Mapping[str, Mapping[str, list[float]]]) -> dict[str, dict[str, dict[str, Any]]]:
    """The stored form of every figure's between-run spread (figures seen in one run only are left out)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name, figures in runs.items():
        for fig, values in figures.items():
            spread = Spread.of(values)
            if spread is not None:
                out.setdefault(name, {})[fig] = spread.to_json()
    return out


def stored_noise(results: Mapping[str, Any]) -> dict[str, dict[str, Spread]]:
    """The between-run spreads a baseline file carries."""
    raw = (results.get("machine_info") or {}).get("perfkit", {}).get("noise") or {}
    return {name: {fig: Spread(float(s["sd"]), float(s["range"]), int(s["runs"])) for fig, s in figs.items()}
            for name, figs in raw.items()}
