"""How every renderer shows a trend and scales a chart: a trend's turns in words, the unit its values read in
and whether its axis is linear or log."""
from __future__ import annotations

import statistics
from collections.abc import Collection

from perfkit.render.tables import fmt_change
from perfkit.verdict import changepoints
from perfkit.verdict.trends import Trend


def display_unit(values: Collection[float], unit: str) -> tuple[float, str]:
    """The scale and unit a chart shows ``values`` of ``unit`` in: seconds as s, ms, us or ns by their median,
    anything else as it is."""
    if unit != "s" or not values:
        return 1.0, unit
    middle = statistics.median(values)
    return next(((s, u) for s, u in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")) if middle >= s), (1e-9, "ns"))


def axis_scale(values: Collection[float]) -> str:
    """"log" for lines whose values span a decade or more, else "linear" (a log axis over 3.1-3.7 s labels
    its ticks 3.1x10^0)."""
    positive = [v for v in values if v > 0]
    return "log" if positive and max(positive) >= 10 * min(positive) else "linear"


def turns(trend: Trend) -> list[tuple[int, str]]:
    """(index, what happened there) of each change point and each new series of ``trend``, in order: what the
    history table and the dashboard say of the trend."""
    said = [(c.index, fmt_change(c.change)) for c in trend.changes]
    said += [(i, f"measured by method {trend.methods[i]} from here: a new series")
             for i in changepoints.breaks(trend.methods)]
    said += [(i, (f"on another machine from here ({change}): a new series, not a change; its median "
                  f"{fmt_change(trend.step(i))}")) for i, change in trend.moves.items()]
    return sorted(said)
