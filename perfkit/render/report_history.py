"""The kept runs in a report: each benchmark's trend in a table, a chart of each trend worth reading (the
rows to read and the benchmarks whose time changed) and a sparkline of a figure's newest kept values."""
from __future__ import annotations

from pathlib import Path

from perfkit.render import document, trend_display
from perfkit.render.document import Image, Section, Spark, Table, Text
from perfkit.render.history_png import history_chart
from perfkit.render.tables import fmt_value
from perfkit.resultfile.figures import TIME
from perfkit.store import storage_folder
from perfkit.verdict import changepoints, trends
from perfkit.verdict.judge import Row

#: How many of the newest kept runs a sparkline draws.
SPARK_RUNS = 20


def spark(trend: trends.Trend, figure: str, chart: str = "") -> Spark:
    """The last ``SPARK_RUNS`` kept values of a figure as a sparkline, labelled with the first and last and
    broken where a new method of measuring it begins; ``chart``: the title of the section it links to."""
    values = tuple(v for _, v in trend.points[-SPARK_RUNS:])
    first = len(trend.points) - len(values)
    label = (f"{figure} over the last {len(values)} kept run(s): {fmt_value(values[0], trend.unit)} to "
             f"{fmt_value(values[-1], trend.unit)}" + ("; click for its chart" if chart else ""))
    return Spark(values, label, document.anchor(chart) if chart else "",
                 breaks=tuple(i - first for i in trend.breaks if i > first))


def trend_rows(found: list[trends.Trend]) -> list[list[str]]:
    """benchmark, runs, first, last, change points (run, date, commit, size) and the runs a new method of
    measuring it begins at: the history table's rows."""
    return [[t.benchmark, str(len(t.points)), fmt_value(t.points[0][1], t.unit),
             fmt_value(t.points[-1][1], t.unit), _turns(t)] for t in found]


def _turns(trend: trends.Trend) -> str:
    """A trend's change points and new series in order, each run numbered as its chart numbers it."""
    return "; ".join(f"{trend.label(i)} {what}" for i, what in trend_display.turns(trend)) or "none"


def trend_charts(found: list[trends.Trend], out: Path, figure: str) -> list[Path]:
    """One PNG per trend in ``out`` (names made unique and file-safe; a figure other than the time names
    itself, so two figures of one benchmark keep two charts)."""
    prefix = "history_" if figure == TIME else f"history_{figure}_"
    charts: list[Path] = []
    for trend in found:
        slug = "".join(
            ch if ch.isalnum() or ch in "-." else "_" for ch in trend.benchmark.removeprefix("benches/")
        )
        png = next(p for i in range(len(charts) + 1)
                   if (p := out / f"{prefix}{slug[:150]}{f'_{i}' if i else ''}.png") not in charts)
        charts.append(history_chart(trend, png, figure))
    return charts


def history_section(kept: storage_folder.History, out: Path, charted: dict[tuple[str, str], trends.Trend],
                    limit: int = 12) -> list[Section]:
    """The kept runs' trends of this hardware: a table of every benchmark's time; a chart of each row to
    read that they hold (``charted``) and of up to ``limit`` other benchmarks whose time changed, each under
    its own heading, which the rows to read link to."""
    found = trends.trends(kept.runs)
    moved = [t for t in found if t.changes and (t.benchmark, TIME) not in charted][:limit]
    wanted = [*charted.items(), *(((t.benchmark, TIME), t) for t in moved)]
    blocks: list[document.Block] = [
        Text(
            f"Time (each run's median); change points by e-divisive means on log values (permutation test p "
            f"<= {changepoints.ALPHA}); charts of the {len(charted)} row(s) to read that the kept runs hold "
            f"and of {len(moved)} other benchmark(s) that changed."
        ),
        Table.of(["benchmark", "runs", "first", "last", "change points"], trend_rows(found)),
    ]
    charts = []
    for figure in dict.fromkeys(f for (_, f), _ in wanted):
        drawn = [t for (_, f), t in wanted if f == figure]
        charts += [Section(chart_title(trend, figure), (Image(trend.benchmark, chart),), level=3)
                   for trend, chart in zip(drawn, trend_charts(drawn, out, figure))]
    return [Section(f"History: {len(kept)} kept run(s) of {', '.join(kept.hardware_ids())}", tuple(blocks)),
            *charts]


def charted_trends(kept: storage_folder.History, rows: list[Row]) -> dict[tuple[str, str], trends.Trend]:
    """The trend of each row to read whose figure the kept runs hold, keyed by (benchmark, figure)."""
    found: dict[tuple[str, str], trends.Trend] = {}
    for figure in dict.fromkeys(r.figure for r in rows):
        names = {r.benchmark for r in rows if r.figure == figure}
        found |= {(t.benchmark, figure): t for t in trends.trends(kept.runs, figure=figure, names=names)}
    return found


def chart_title(trend: trends.Trend, figure: str) -> str:
    return f"{figure} of {trend.benchmark}"
