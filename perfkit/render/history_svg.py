"""One benchmark's history as an inline SVG chart: the dashboard's pages draw hundreds of them.

Why: matplotlib takes a tenth of a second a chart, and the dashboard of the committed baselines holds over
400 (34 s on a 2-core box); text is microseconds, needs no file beside the page and still opens offline.
It shows what :func:`perfkit.render.history_png.history_chart` shows, from the same trend: each run a point
(its label and value the tooltip), the line broken where a new series begins (another method or machine: a
grey dotted line naming it), each segment's median in orange, each change point a dashed red line with its
step.
"""
from __future__ import annotations

import html
import math

from perfkit.render.trend_display import axis_scale, display_unit
from perfkit.verdict.trends import Trend

WIDTH, HEIGHT = 900, 400
LEFT, RIGHT, TOP, BOTTOM = 72, 16, 34, 64
#: At most this many run labels under the axis.
X_LABELS = 8
X_AXIS = "its run (of the stored runs that hold it), oldest first, and its date; orange: a segment's median"


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]: steps of 1, 2 or 5 times a power of ten."""
    if high <= low:
        return [low]
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def _log_ticks(low: float, high: float) -> list[float]:
    """Powers of ten inside [low, high], with 2 and 5 times them where fewer than three decades show."""
    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    marks = (1, 2, 5) if len(decades) <= 3 else (1,)
    return [m * 10.0**d for d in decades for m in marks if low <= m * 10.0**d <= high]


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def history_svg(trend: Trend, figure: str) -> str:
    """The chart of ``figure`` over ``trend``'s runs, as an ``<svg>`` element. Long on purpose: one picture in
    one coordinate system (``x``, ``y``), drawn back to front."""
    values = [v for _, v in trend.points]
    if not values:
        return ""
    scale, unit = display_unit(values, trend.unit)
    shown = [v / scale for v in values]
    log = axis_scale(shown) == "log" and min(shown) > 0  # a zero has no place on a log axis
    low, high = min(shown), max(shown)
    if log:
        ticks = _log_ticks(low, high)
        low, high = math.log10(low) - 0.05, math.log10(high) + 0.05
    else:
        pad = (high - low) * 0.08 or abs(high) * 0.05 or 1.0
        low, high = low - pad, high + pad
        ticks = _nice_ticks(low, high)
    count, plot_w, plot_h = len(shown), WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(run: float) -> float:  # run numbers from 1; 0.5 and count + 0.5 are the edges
        return LEFT + (run - 0.5) / count * plot_w

    def y(value: float) -> float:
        at = math.log10(value) if log else value
        return TOP + (high - at) / (high - low) * plot_h

    parts = [f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>']
    for tick in ticks:
        parts.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
                     'stroke="#e3e3e3"/>'
                     f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{_fmt(tick)}</text>')
    step = max(1, math.ceil(count / X_LABELS))
    for index in range(0, count, step):
        date = html.escape(trend.points[index][0][:10] or "undated")
        parts.append(f'<text x="{x(index + 1):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{index + 1}'
                     f'<tspan x="{x(index + 1):.1f}" dy="13">{date}</tspan></text>')
    for first, end, median in trend.segments():
        parts.append(f'<line x1="{x(first + 0.5):.1f}" x2="{x(end + 0.5):.1f}" y1="{y(median / scale):.1f}" '
                     f'y2="{y(median / scale):.1f}" stroke="#ff7f0e" stroke-width="2"/>')
    def beside(at: float) -> str:  # a label right of its line, or left of it past the middle
        return f'x="{at + 3:.1f}"' if at < LEFT + plot_w / 2 else f'x="{at - 3:.1f}" text-anchor="end"'

    for change in trend.changes:
        at = x(change.index + 0.5)
        parts.append(f'<line x1="{at:.1f}" x2="{at:.1f}" y1="{TOP}" y2="{TOP + plot_h}" stroke="#d62728" '
                     f'stroke-dasharray="5 3"/><text {beside(at)} y="{TOP + 12}" fill="#d62728">'
                     f"{html.escape(f'{change.change:+.1%}')}</text>")
    breaks = trend.breaks
    for index in breaks:  # a row below the change points' labels: one index can hold both
        at = x(index + 0.5)
        parts.append(f'<line x1="{at:.1f}" x2="{at:.1f}" y1="{TOP}" y2="{TOP + plot_h}" stroke="#888" '
                     f'stroke-dasharray="2 3" stroke-width="1.5"/><text {beside(at)} y="{TOP + 24}" '
                     f'fill="#555">new series {html.escape(f"{trend.step(index):+.0%}")}</text>')
    for first, end in zip([0, *breaks], [*breaks, count]):
        line = " ".join(f"{x(i + 1):.1f},{y(shown[i]):.1f}" for i in range(first, end))
        parts.append(f'<polyline points="{line}" fill="none" stroke="#1f77b4" stroke-width="1.2"/>')
    parts += [f'<circle cx="{x(i + 1):.1f}" cy="{y(v):.1f}" r="3" fill="#1f77b4"><title>'
              f"{html.escape(trend.label(i))}: {_fmt(v)} {html.escape(unit)}</title></circle>"
              for i, v in enumerate(shown)]
    axis = f"{figure} ({unit})" if unit else figure
    title = trend.benchmark if len(trend.benchmark) <= 100 else "..." + trend.benchmark[-97:]
    vertical = f'transform="translate(16 {TOP + plot_h / 2:.0f}) rotate(-90)" text-anchor="middle"'
    below = f'x="{LEFT + plot_w / 2:.0f}" y="{HEIGHT - 8}" text-anchor="middle"'
    parts += [f'<text x="{LEFT}" y="{TOP - 12}" font-weight="600">{html.escape(title)}</text>',
              f"<text {vertical}>{html.escape(axis)}{' (log scale)' if log else ''}</text>",
              f"<text {below}>{X_AXIS}</text>"]
    label = html.escape(f"history of {figure} of {trend.benchmark}")
    return (f'<svg class="history" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
            f'role="img" aria-label="{label}" font-family="system-ui, sans-serif" font-size="11">'
            f"<title>{label}</title>{''.join(parts)}</svg>")
