"""What every plot shares: matplotlib loaded when first drawn (a comparison never loads it), a figure laid out
and saved, bars labelled with their values, grouped bars, plain log ticks, and labels placed clear of each
other, of the points and of the legend."""
from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> Path:
    if fig.get_layout_engine() is None:  # a figure laid out as constrained keeps its suptitle clear
        fig.tight_layout()
    fig.savefig(path, dpi=110)
    pyplot().close(fig)
    return path


def round_quartiles(samples: tuple[float, ...]) -> tuple[float, float] | None:
    """(q1, q3) of a benchmark's rounds; None with fewer than two."""
    if len(samples) < 2:
        return None
    q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return q1, q3


def label_bars(ax: Any, bars: Any) -> None:
    """Each bar's value above it, so a short bar on a linear axis still reads (12,908, not 1.29e+04)."""
    ax.bar_label(bars, fmt=lambda v: f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}", fontsize=7, padding=1)


def plain_log_ticks(*axes: Any) -> None:
    """Log axes labelled 0.1, 1, 10 (and 32, 128 where a decade holds few ticks), without minor labels such as
    3x10^-1 and 4x10^-1 printed over each other."""
    from matplotlib import ticker

    for axis in axes:
        axis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        axis.set_minor_formatter(ticker.NullFormatter())


def grouped_bars(ax: Any, groups: list[str], series: dict[str, list[float | None]], ylabel: str,
                 spread: dict[str, list[tuple[float, float] | None]] | None = None) -> None:
    """Bars per group and series on a linear axis from zero, each labelled with its value; ``spread``: per
    series and group the (q1, q3) of its rounds, drawn as an error bar."""
    width = 0.8 / max(len(series), 1)
    for i, (label, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        heights = [v if v is not None else 0 for v in values]
        quartiles = (spread or {}).get(label)
        yerr = None
        if quartiles:
            yerr = [[h - q[0] if q else 0 for h, q in zip(heights, quartiles)],
                    [q[1] - h if q else 0 for h, q in zip(heights, quartiles)]]
        label_bars(ax, ax.bar(xs, heights, width=width, label=label, yerr=yerr, capsize=3 if yerr else 0))
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.15)  # room for the labels
    ax.legend(fontsize=8)


#: Where a point's label may go, in points from the point, nearest first: right, left, above, below, then the
#: diagonals further out (joined to the point by a line).
_LABEL_OFFSETS = ((7, 0), (-7, 0), (0, 8), (0, -8), (10, 10), (-10, 10), (10, -10), (-10, -10),
                  (18, 18), (-18, 18), (18, -18), (-18, -18), (28, 30), (-28, 30), (28, -30), (-28, -30))


def place_labels(ax: Any, labels: Sequence[tuple[float, float, str]], fontsize: float = 7,
                 others: Sequence[tuple[float, float]] = ()) -> None:
    """Each (x, y, text) label at the nearest of :data:`_LABEL_OFFSETS` where its box covers no other label,
    no point and no legend (the roofline's VGG16 and VGG19 at one batch sit a few pixels apart: labels one
    line apart still printed over each other and over the points); ``others``: unlabelled points to keep
    clear too. A label with no free place keeps the last."""
    from matplotlib.transforms import Bbox

    renderer = ax.figure.canvas.get_renderer()
    to_pixels = ax.transData.transform
    marker = 5.0  # pixels about a point's centre its marker covers
    taken = [Bbox.from_extents(px - marker, py - marker, px + marker, py + marker)
             for px, py in (to_pixels(xy) for xy in [*((x, y) for x, y, _ in labels), *others])]
    taken += [legend.get_window_extent(renderer) for legend in [ax.get_legend()] if legend is not None]
    for x, y, text in labels:
        for dx, dy in _LABEL_OFFSETS:  # the last place is kept where none is free
            box = _text_box(ax, renderer, (x, y, text), (dx, dy), fontsize)
            if ax.bbox.contains(box.x0, box.y0) and ax.bbox.contains(box.x1, box.y1) \
                    and not any(box.overlaps(other) for other in taken):
                break
        taken.append(box)
        note = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize,
                           **_alignment(dx, dy),
                           # a diagonal label is joined to its point, which it names
                           arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "0.4"} if dx and dy else None)
        note.set_in_layout(False)


def _alignment(dx: float, dy: float) -> dict[str, str]:
    """A label's alignment that keeps it on the side of its point it is offset to."""
    return {"ha": "left" if dx > 0 else "right" if dx < 0 else "center",
            "va": "bottom" if dy > 0 else "top" if dy < 0 else "center"}


def _text_box(ax: Any, renderer: Any, label: tuple[float, float, str], offset: tuple[float, float],
              fontsize: float) -> Any:
    """The pixels a label's text would cover at ``offset`` (points) from its point (a leader line would
    widen an annotation's own box to the point)."""
    x, y, text = label
    note = ax.annotate(text, (x, y), xytext=offset, textcoords="offset points", fontsize=fontsize,
                       **_alignment(*offset))
    box = note.get_window_extent(renderer)
    note.remove()
    return box
