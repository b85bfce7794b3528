"""Which of a benchmark's stored runs each figure's values came from (PerfkitInfo.figure_runs), where fewer
runs hold the figure than its time: a later run began to record it (launches per step), or a run left it out.
A baseline's runs keep one list of values per figure, so without the positions such values cannot be given
back to their runs (perfkit.store.baseline_runs)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfkit.errors import BaselineError

#: Positions among a benchmark's runs, in order
Positions = tuple[int, ...]


def parse(value: Any) -> Positions:
    """A stored list of run positions; a TypeError where it is anything else."""
    if not isinstance(value, list) or not all(type(i) is int for i in value):
        raise TypeError(f"figure_runs holds {value!r} where a list of run positions belongs")
    return tuple(value)


def check(name: str, figure: str, at: Positions, values: Sequence[float] | None, runs: int,
          where: str) -> None:
    """The positions name distinct runs of the benchmark's ``runs``, in order, one per value."""
    if values is None or len(at) != len(values) or list(at) != sorted(set(at)) or \
            (at and (at[0] < 0 or at[-1] >= runs)):
        raise BaselineError(f"{where}: figure_runs places the {len(values or ())} value(s) of {name}'s "
                            f"{figure} at runs {list(at)} of {runs}; re-save the baseline from its result "
                            "files")


def of(figures: Mapping[str, Sequence[float]], runs: int,
       stored: Mapping[str, Positions]) -> dict[str, Positions]:
    """Each figure's positions among the benchmark's ``runs``: every run where it has one value per run; as
    ``stored`` where it has fewer; else (a baseline saved before the positions were kept) the newest runs, as
    for a figure a later run began to record."""
    return {figure: stored.get(figure) or tuple(range(runs - len(values), runs))
            for figure, values in figures.items()}
