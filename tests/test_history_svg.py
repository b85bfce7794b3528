"""The dashboard's inline history chart (perfkit.render.history_svg): what it draws of a trend."""
from __future__ import annotations

import re

from perfkit.render.history_svg import history_svg
from perfkit.verdict.changepoints import ChangePoint
from perfkit.verdict.trends import Trend

NAME = "benches/test_x.py::test_x[a<b]"


def _trend(values: list[float], changes=(), methods=()) -> Trend:
    points = [(f"2026-11-{10 + i:02d}T02:00:00+00:00", v) for i, v in enumerate(values)]
    return Trend(NAME, "s", points, tuple(changes), tuple(methods))


def test_a_change_point_is_a_dashed_red_line_with_its_step_and_each_run_a_point_with_its_tooltip():
    values = [1.00e-3, 1.01e-3, 0.99e-3, 1.10e-3, 1.11e-3, 1.09e-3]
    svg = history_svg(_trend(values, [ChangePoint(3, 1.0e-3, 1.1e-3, 0.001)]), "time")
    assert svg.startswith('<svg class="history"') and svg.endswith("</svg>")
    assert 'aria-label="history of time of benches/test_x.py::test_x[a&lt;b]"' in svg  # escaped
    assert svg.count("<circle") == len(values) and "run 4 (2026-11-13 02:00): 1.1 ms</title>" in svg
    assert svg.count('stroke="#d62728" stroke-dasharray') == 1 and ">+10.0%</text>" in svg
    assert svg.count('stroke="#ff7f0e"') == 2  # one median per segment
    assert svg.count("<polyline") == 1 and "time (ms)" in svg and "log scale" not in svg


def test_a_new_method_breaks_the_line_and_a_decade_apart_reads_on_a_log_axis():
    values = [1.0, 1.02, 0.98, 20.0, 20.4, 19.6]
    svg = history_svg(_trend(values, methods=[1, 1, 1, 2, 2, 2]), "time")
    assert svg.count("<polyline") == 2  # two series, not one line across the break
    assert 'stroke="#888" stroke-dasharray="2 3"' in svg and "new series +1900%" in svg
    assert "time (s) (log scale)" in svg
    ticks = [float(t) for t in re.findall(r'text-anchor="end">([\d.e+-]+)</text>', svg)]
    assert 1 in ticks and 10 in ticks  # decades


def test_every_point_lies_inside_the_plot_whatever_the_values():
    for values in ([5.0], [2.0, 2.0, 2.0], [1e-9, 3e-9, 2e-9], [100.0, 1.0], [0.0, 1.0, 20.0]):
        svg = history_svg(_trend(values), "time")
        points = re.findall(r'<circle cx="(-?[\d.]+)" cy="(-?[\d.]+)"', svg)
        assert len(points) == len(values)
        for cx, cy in points:
            assert 72 <= float(cx) <= 900 - 16 and 34 <= float(cy) <= 400 - 64, (values, cx, cy)
    assert history_svg(_trend([]), "time") == ""


def test_a_zero_among_values_a_decade_apart_keeps_a_linear_axis():
    svg = history_svg(_trend([0.0, 1.0, 20.0]), "time")
    assert "log scale" not in svg and svg.count("<circle") == 3
