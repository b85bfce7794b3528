"""Across two machines as a PNG: each benchmark's measured speedup against the speedup expected of it."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from perfkit.render.plotting import place_labels, pyplot, save_figure
from perfkit.resultfile import figures


def hardware_chart(rows: Iterable[Any], baseline_id: str, current_id: str, path: Path) -> Path | None:
    """Across two machines (``baseline_id`` and ``current_id`` name them): each benchmark's measured speedup
    against the speedup expected of it (``across.HardwareRow``): squares where a kernel's ceiling gave it,
    circles where the roofline model did (coloured by the larger share of the model's time), the diagonal
    where they agree, the band of x1.15 (as expected) shaded and x1.25 (FAR beyond) dashed; the benchmarks
    outside the band are named. A ceiling's own benchmark is left out, and counted in the title: its speedup
    is its expectation by definition, a point on the diagonal that checks nothing. None when no other
    benchmark carries an expectation."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

    rows = list(rows)
    points = [r for r in rows if r.checks and 0 < r.speedup < float("inf")]
    ceilings = sum(1 for r in rows if r.by_definition)
    if not points:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 7))
    groups: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for r in points:
        groups[_expected_from(r)].append(r)
    for i, ((label, marker), mine) in enumerate(sorted(groups.items())):
        ax.scatter([r.expected for r in mine], [r.speedup for r in mine], color=f"C{i}", marker=marker,
                   label=f"{label} ({len(mine)})", s=30, zorder=3, edgecolors="white", linewidths=0.5)
    low = min(min(r.expected, r.speedup) for r in points) / 1.3
    high = max(max(r.expected, r.speedup) for r in points) * 1.3
    near, far = points[0].NEAR, points[0].FAR  # across.HardwareRow's bands, the ones its verdicts use
    ax.plot([low, high], [low, high], "k-", lw=0.8, label="measured = expected")
    ax.fill_between([low, high], [low / near, high / near], [low * near, high * near], color="grey",
                    alpha=0.2, label=f"as expected: within x{near}")
    for factor in (far, 1 / far):
        ax.plot([low, high], [low * factor, high * factor], "k--", lw=0.6,
                label=f"x{far}: FAR from expected beyond" if factor == far else None)
    missed = sorted((r for r in points if not 1 / near <= r.ratio <= near), key=lambda r: -r.speedup)
    ax.set(xscale="log", yscale="log")  # before the tick locators: setting a scale replaces them
    # plain numbers where the speedups span less than two decades (0.6, 0.7, ... 1.2, 1.5), else 1-2-5 steps
    plain = [v * 10.0**k for k in range(-4, 4) for v in (1, 1.2, 1.5, 2, 3, 4, 5, 6, 7, 8, 9)]
    shown = [v for v in plain if low <= v <= high]
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(FixedLocator(shown) if len(shown) <= 14 else LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_minor_locator(NullLocator())
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.3g}"))
    within = len(points) - len(missed)
    sides = f"{baseline_id} / {current_id} time"
    ax.set(xlim=(low, high), ylim=(low, high),
           xlabel=f"expected speedup of {current_id} over {baseline_id}",
           ylabel=f"measured speedup ({sides if len(sides) <= 50 else 'baseline time / current time'})",
           title=f"Across hardware: {within} of {len(points)} benchmarks within x{near} of their "
                 "expected speedup" + (f"\n{ceilings} ceiling benchmark(s) not shown: their speedup is "
                                       "their expectation" if ceilings else ""))
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()  # the layout the names are placed in (they stay out of it)
    place_labels(ax, [(r.expected, r.speedup, r.benchmark.split("::")[-1]) for r in missed], 7.5,
                 [(r.expected, r.speedup) for r in points])
    return save_figure(fig, path)


def _expected_from(row: Any) -> tuple[str, str]:
    """A row's source of expectation for the legend, and its marker: a kernel's ceiling (a square), or the
    model by the larger share of its time (a circle)."""
    if row.model is None:
        kind = "launch" if row.bound == figures.GRAPH_REPLAY_S.name else figures.ceiling_label(row.bound)
        return f"kernel, its {kind} ceiling", "s"
    shares = row.model.current.shares()
    return f"model, {max(shares, key=shares.get)}-bound", "o"
