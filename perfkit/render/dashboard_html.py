"""The dashboard as static pages (``perfkit dashboard --out site/``): ``index.html`` and one page per
benchmark and hardware id, each history chart an inline SVG (perfkit.render.history_svg) in its page.

It must open from file:// on a machine without network (a CI artifact, unzipped): no script, no CDN, no
absolute link; the charts and the index's sparklines are inline SVG. Page names are made from the benchmark id
(which holds ``[``, ``]``, ``::`` and ``/``) by :func:`unique_name`: file-safe characters only, with a hash
of the whole id, so two ids never share a page whatever they hold. The pages say nothing of where or when
they were built, so the same runs give the same site from any database.
"""
from __future__ import annotations

import hashlib
import html
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from perfkit.explain.diff import TABLE_HEAD
from perfkit.explain.why import Why
from perfkit.render import tables, trend_display
from perfkit.render.dashboard import Benchmark, Dashboard, Group, Latest, Speedup
from perfkit.render.document import Spark, page_html, spark_svg, table_html
from perfkit.render.history_svg import history_svg
from perfkit.resultfile.figures import TIME, TIME_UNIT
from perfkit.verdict import across as across_verdicts
from perfkit.verdict.judge import MIN_BASELINE_RUNS, WORST_FIRST, Row, Verdict, counted

INDEX = "index.html"
#: The page of every pair of hardware ids' speedups, measured beside expected.
ACROSS = "across.html"
#: The runs a sparkline shows (the newest ones).
SPARK_RUNS = 30
SPARK_WIDTH, SPARK_HEIGHT = 140, 28


def unique_name(text: str) -> str:
    """A file name for ``text``: its slug, keeping case, ``.`` and ``_`` so a benchmark id reads as itself,
    shortened, and 10 hex digits of its SHA-256, so no two ids share one."""
    readable = tables.slug(text.removeprefix("benches/"), keep="._-")[:80]
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
    return f"{readable}-{digest}" if readable else digest


def group_slug(group: Group) -> str:
    return unique_name(f"{group.hardware_id}-{group.profile}")


def page_name(group: Group, bench: Benchmark) -> str:
    """The benchmark page's path relative to the index."""
    return f"{group_slug(group)}/{unique_name(bench.name)}.html"


def write(dashboard: Dashboard, out: Path) -> Path:
    """Write the index and every benchmark page (its charts inside it) under ``out``; the index's path."""
    out.mkdir(parents=True, exist_ok=True)
    for group in dashboard.groups:
        for bench in group.benchmarks:
            page = out / page_name(group, bench)
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(_benchmark_page(group, bench), encoding="utf-8")
    (out / ACROSS).write_text(_across_page(dashboard), encoding="utf-8")
    index = out / INDEX
    index.write_text(_index(dashboard), encoding="utf-8")
    return index


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] = (),
           kind: str = "") -> str:
    """A table of cells already in HTML; the columns ``numeric`` right-aligned."""
    def cell(i: int, text: str) -> str:
        return f'<td class="num">{text}</td>' if i in numeric else f"<td>{text}</td>"

    return table_html([html.escape(h) for h in head],
                      ["".join(cell(i, c) for i, c in enumerate(row)) for row in rows], kind)


def _verdict(verdict: Verdict) -> str:
    return f'<span class="v {verdict.value.replace(" ", "-")}">{verdict.value}</span>'


def _when(iso: str) -> str:
    """A run's date and time; "undated" for a run a baseline kept without its date
    (perfkit.store.baseline_runs)."""
    return html.escape(iso[:16].replace("T", " ")) or "undated"


def _text(value: object) -> str:
    return html.escape(str(value)) if value not in (None, "") else "-"


def _value(value: float | None, unit: str = TIME_UNIT) -> str:
    return html.escape(tables.fmt_value(value, unit))


def _group_title(group: Group) -> str:
    return f"{group.hardware_id} ({group.profile} profile)"


def _change(row: Row | None) -> str:
    if row is None or row.change is None:
        return "-"
    return html.escape(f"{row.figure} {tables.fmt_change(row.change)}")


def _spark(bench: Benchmark) -> str:
    values = [v for _, v in bench.trend.points]
    first = max(0, len(values) - SPARK_RUNS)
    shown = tuple(values[first:])
    spark = Spark(shown, f"the last {len(shown)} run(s)",
                  changes=tuple(c.index - first for c in bench.trend.changes),
                  breaks=tuple(i - first for i in bench.trend.breaks))
    return spark_svg(spark, SPARK_WIDTH, SPARK_HEIGHT)


def _index(dashboard: Dashboard) -> str:
    runs = sum(len(g.runs) for g in dashboard.groups)
    about = (f'<p class="muted">{runs} stored run(s) of {len(dashboard.groups)} hardware id(s) and '
             "profile(s). A benchmark's verdict is that of the newest run that holds it, judged by perfkit's "
             "judge and noise model against the benchmark's runs before it; its trend is its median time "
             f"over its last {SPARK_RUNS} runs (dashed: a change point).</p>")
    links = "".join(f'<li><a href="#{group_slug(g)}">{html.escape(_group_title(g))}</a></li>'
                    for g in dashboard.groups)
    across = (f'<p><a href="{ACROSS}">Across hardware</a>: every pair of hardware ids, each speedup measured '
              "beside expected.</p>")
    body = ["<h1>perfkit dashboard</h1>", about, f"<ul>{links}</ul>", across]
    for group in dashboard.groups:
        body += _group_section(group)
    return page_html("perfkit dashboard", body)


def _group_section(group: Group) -> list[str]:
    counts = group.counts()
    said = ", ".join(f"{counts[v]} {v.value}" for v in WORST_FIRST if v in counts)
    first, newest = group.runs[0], group.runs[-1]
    worst_first = sorted(group.benchmarks, key=lambda b: (WORST_FIRST.index(b.latest.verdict), b.name))
    rows = [[f'<a href="{page_name(group, b)}">{html.escape(b.name)}</a>', _verdict(b.latest.verdict),
             _change(b.latest.deciding()), _value(b.trend.points[-1][1]), _spark(b), str(len(b.runs))]
            for b in worst_first]
    summary = (f"<p>{len(group.runs)} run(s) from {_when(first.datetime)} to {_when(newest.datetime)} (the "
               f"newest on machine {_text(newest.info.machine)}, commit {_text(newest.commit[:10])}): "
               f"{html.escape(said)}.</p>")
    head = ["benchmark", "latest verdict", "change", "latest time", "trend", "runs"]
    return [f'<h2 id="{group_slug(group)}">{html.escape(_group_title(group))}</h2>', summary,
            _table(head, rows, numeric=(3, 5), kind="trends")]


def _benchmark_page(group: Group, bench: Benchmark) -> str:
    back = f"../{INDEX}#{group_slug(group)}"
    drawn = [(TIME, bench.trend), *([bench.moved] if bench.moved is not None else [])]
    images = "".join(f"<figure>{history_svg(trend, figure)}</figure>" for figure, trend in drawn)
    body = [f'<p><a href="{back}">&larr; {html.escape(_group_title(group))}</a></p>',
            f"<h1><code>{html.escape(bench.name)}</code></h1>",
            *_latest_section(group, bench.latest),
            f"<h2>History</h2>{images}",
            _change_points(bench),
            "<h2>Runs</h2>",
            _table(["run", "date", "machine", "commit", "time"],
                   ([str(i), _when(r.when), _text(r.machine), _text(r.commit[:10]), _value(r.value)]
                    for i, r in enumerate(bench.runs, 1)), numeric=(0, 4)),
            "<h2>Fingerprint changes between consecutive runs</h2>",
            _fingerprint_changes(bench),
            "<h2>Across hardware</h2>",
            _speedups(group, bench)]
    return page_html(bench.name, body)


def _latest_section(group: Group, latest: Latest) -> list[str]:
    if latest.against < MIN_BASELINE_RUNS:
        return [_no_baseline(group, latest), _values_table(latest)]
    rows = ([html.escape(r.figure), _value(r.baseline, r.unit), _value(r.current, r.unit),
             html.escape(tables.fmt_change(r.change)), _verdict(r.verdict),
             "-" if r.p_value is None else f"{r.p_value:.2g}", "-" if r.mde is None else f"{r.mde:.1%}",
             _text(r.note)] for r in latest.rows)
    run = f"the run of {_when(latest.when)}" if latest.when else "the undated run"
    said = (f"<p>Latest verdict: {_verdict(latest.verdict)}, {run} against "
            f"its {latest.against} run(s) before (and the noise of every earlier run since its last "
            "change point).</p>")
    return [said,
            _table(["figure", "before", "latest", "change", "verdict", "p", "MDE", "note"], rows,
                   numeric=(1, 2, 3, 5, 6)),
            *_why(latest.why)]


def _no_baseline(group: Group, latest: Latest) -> str:
    """The latest verdict of a benchmark that fewer earlier runs hold than the judge needs: the dashboard's
    baseline is its machine's earlier runs in this database, so it says how many there are and that each
    nightly run ingested adds one, not the judge's notes (their advice re-saves a baseline file)."""
    where = (f"on this machine (the earlier ones ran on another machine under the id: "
             f"{html.escape(latest.elsewhere)}) " if latest.elsewhere else "")
    machine = html.escape(group.hardware_id)
    if latest.against:
        hold = "holds" if latest.against == 1 else "hold"
        held = (f"only {counted(latest.against, 'earlier run')} of {machine} {where}{hold} it, fewer than "
                f"the {MIN_BASELINE_RUNS} the judge needs")
    else:
        held = f"no earlier run of {machine} {where}holds it"
    return (f"<p>Latest verdict: {_verdict(latest.verdict)}: {held}. This dashboard judges a run against "
            f"the earlier runs of its machine in its database, so it is judged once {MIN_BASELINE_RUNS} are "
            "there: each run that <code>perfkit history ingest RESULTS.json --db URL</code> stores adds "
            "one.</p>")


def _values_table(latest: Latest) -> str:
    """The figures of the latest run beside the earlier runs' (where any), unjudged: no verdict, p or MDE."""
    rows = [[html.escape(r.figure), _value(r.baseline, r.unit), _value(r.current, r.unit),
             html.escape(tables.fmt_change(r.change))] for r in latest.rows]
    return _table(["figure", "before", "latest", "change"], rows, numeric=(1, 2, 3)) if rows else ""


def _why(why: Why | None) -> list[str]:
    """Why a flagged benchmark moved: the reading, and the kernels, copies and launches that moved most."""
    if why is None:
        return []
    said = [f"<h2>Why it moved</h2><p>{html.escape(why.reading)}</p>"]
    if why.explanation is None or not why.explanation.compared:
        return said
    rows = ([html.escape(cell) for cell in row] for row in why.explanation.rows_for_table())
    return [*said, _table(TABLE_HEAD, rows, numeric=(1, 2, 3, 4))]


def _change_points(bench: Benchmark) -> str:
    """The trend's change points and new series (another method, another machine), in the words and run
    numbers of ``perfkit history`` and of the chart."""
    trend = bench.trend
    found = [f"from {trend.label(i)} {what}" for i, what in trend_display.turns(trend)]
    if not found:
        return "<p>No change point in its time.</p>"
    turns = html.escape("; ".join(found))
    return f"<p>Change points and new series of its time (e-divisive means): {turns}.</p>"


def _fingerprint_changes(bench: Benchmark) -> str:
    moved = [(i, run, change) for i, run in enumerate(bench.runs, 1) for change in run.changes]
    if not moved:
        return "<p>None: each run had the fingerprint of the run before it.</p>"
    return _table(["run", "date", "field", "before", "after"],
                  ([str(i), _when(run.when), html.escape(name), _text(old), _text(new)]
                   for i, run, (name, old, new) in moved), numeric=(0,))


def _speedups(group: Group, bench: Benchmark) -> str:
    if not bench.speedups:
        return f"<p>No other hardware id holds it in the {html.escape(group.profile)} profile.</p>"
    return _table(["the latest run of", "its date", f"speedup of {group.hardware_id} over it", "expected",
                   "verdict", "expected from"],
                  ([html.escape(s.hardware_id), _when(s.when), f"{s.row.speedup:.3g}x",
                    "-" if s.row.expected is None else f"{s.row.expected:.3g}x", _text(s.row.verdict),
                    html.escape(s.row.source())] for s in bench.speedups),
                  numeric=(2, 3))


def _across_page(dashboard: Dashboard) -> str:
    """One section per pair of hardware ids of a profile (each pair once, in name order): every benchmark
    both hold, the one's latest run over the other's, beside the speedup expected of it, the farthest from
    it first."""
    pairs: dict[tuple[str, str, str], list[tuple[str, Speedup]]] = {}
    for group in dashboard.groups:
        for bench in group.benchmarks:
            for speedup in bench.speedups:
                if group.hardware_id < speedup.hardware_id:  # the other direction is its inverse
                    key = (group.profile, group.hardware_id, speedup.hardware_id)
                    pairs.setdefault(key, []).append((bench.name, speedup))
    body = [f'<p><a href="{INDEX}">&larr; perfkit dashboard</a></p>', "<h1>Across hardware</h1>"]
    if not pairs:
        body.append("<p>No two hardware ids of one profile hold a benchmark in common yet.</p>")
    for (profile, this, other), rows in sorted(pairs.items()):
        expected = [s.row for _, s in rows if s.row.checks]
        near = sum(1 for row in expected if row.verdict == across_verdicts.AS_EXPECTED)
        said = (f"<p>{len(rows)} benchmark(s); {len(expected)} with an expected speedup, {near} of them "
                f"within x{across_verdicts.HardwareRow.NEAR:g} of it.</p>")
        ordered = sorted(rows, key=lambda r: -abs(math.log(r[1].row.ratio)) if r[1].row.ratio else 0.0)
        table = _table(["benchmark", f"speedup of {this} over {other}", "expected", "verdict", "why"],
                       ([html.escape(name), f"{s.row.speedup:.3g}x",
                         "-" if s.row.expected is None else f"{s.row.expected:.3g}x", _text(s.row.verdict),
                         html.escape(s.row.reason() or s.row.source())] for name, s in ordered),
                       numeric=(1, 2))
        title = f"{this} over {other} ({profile} profile)"
        body += [f"<h2>{html.escape(title)}</h2>", said, table]
    return page_html("perfkit dashboard: across hardware", body)
