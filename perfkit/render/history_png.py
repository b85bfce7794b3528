"""A trend as a PNG: one benchmark's figure over its kept runs, with its change points and each segment's
median (perfkit.render.history_svg draws the same trend as an inline SVG for the dashboard)."""
from __future__ import annotations

import math
from pathlib import Path

from perfkit.render.plotting import plain_log_ticks, pyplot, save_figure
from perfkit.render.trend_display import axis_scale, display_unit
from perfkit.resultfile import figures
from perfkit.verdict import changepoints
from perfkit.verdict.trends import Trend


def history_chart(trend: Trend, path: Path, figure: str = figures.TIME) -> Path:
    """One benchmark's figure over its stored runs (oldest first, numbered as every table numbers them),
    change points as vertical lines and each segment's median as a horizontal one: the shift is read off the
    medians, not off single noisy runs. Where the method of measuring the figure (perfkit.resultfile.figures.
    METHODS) or the machine under the hardware id (a CPU of another generation) changes the line breaks, at a
    grey dotted line naming what measured the new series and its step: the values either side are two
    series, not a change."""
    from itertools import pairwise

    points, changes, breaks = list(trend.points), sorted(c.index for c in trend.changes), trend.breaks
    values = [v for _, v in points]
    scale, unit = display_unit(values, trend.unit)
    shown = [v / scale for v in values]
    runs = list(range(1, len(shown) + 1))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for a, b in pairwise([0, *breaks, len(shown)]):
        ax.plot(runs[a:b], shown[a:b], marker="o", ms=4, lw=1, color="tab:blue",
                label=f"{figure} (one point per run)" if a == 0 else None)
    segments = trend.segments()
    median_from = {a: median / scale for a, _, median in segments}
    for a, b, _ in segments:
        ax.hlines(median_from[a], a + 0.5, b + 0.5, colors="tab:orange", lw=2,
                  label="segment median" if a == 0 else None)
    for i, index in enumerate(changes):
        before = median_from[max(a for a in median_from if a < index)]
        change = median_from[index] / before - 1 if before else float("nan")
        ax.axvline(index + 0.5, color="tab:red", ls="--", lw=1.2, label="change point" if i == 0 else None)
        ax.annotate(f"{change:+.1%}", (index + 0.5, max(shown)), xytext=(3, -12), textcoords="offset points",
                    color="tab:red", fontsize=8)
    for i, index in enumerate(breaks):
        ax.axvline(index + 0.5, color="grey", ls=":", lw=1.5,
                   label="measured another way or on another machine from here: a new series" if i == 0
                   else None)
    for index in [0, *breaks] if breaks else []:  # each series says what measured it, and its step
        ax.annotate(_series_name(trend, index), (index + 0.5, max(shown)), xytext=(3, -12),
                    textcoords="offset points", color="dimgrey", fontsize=8, va="top")
    step = max(1, math.ceil(len(runs) / 8))
    days = [d[:10] for d, _ in points]
    # the run's number (as the tables number them) over its date, and its time where runs share a day; a run a
    # baseline kept without its date (perfkit.store.baseline_runs) says so
    when = [("undated" if not d else d[:10] if len(set(days)) == len(days) else f"{d[5:10]}\n{d[11:16]}")
            for d, _ in points]
    ax.set_xticks(runs[::step], [f"{r}\n{w}" for w, r in zip(when[::step], runs[::step])], fontsize=7)
    ax.set(
        xlabel="its run (of the stored runs that hold it), oldest first, and its date",
        ylabel=f"{figure} ({unit})" if unit else figure,
        title=trend.benchmark if len(trend.benchmark) <= 90 else "..." + trend.benchmark[-87:],
    )
    if axis_scale(shown) == "log":  # two series a decade apart (another CPU): each keeps its own shape
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_figure(fig, path)


def _series_name(trend: Trend, index: int) -> str:
    """What measured the series that begins at point ``index``: its method where the trend changes method, its
    CPU where it changes machine; after the first, its step from the series before."""
    said = [f"method {trend.methods[index]}"] if changepoints.breaks(trend.methods) else []
    said += [f"CPU {trend.machines[index]}"] if trend.moves and trend.machines[index] else []
    return "\n".join([", ".join(said), *([f"{trend.step(index):+.0%}"] if index else [])])
