"""The run report: one list of sections (perfkit.render.document) written as markdown and as a
self-contained HTML page, with the plots as PNGs beside it.

It opens with the verdict line and the rows a person should read (perfkit.render.verdicts), each pointing at
its family's section and, with kept runs, at its trend (perfkit.render.report_history); then the
fingerprint, across hardware the measured against the expected speedups, one section per bench file (its
benchmarks' table beside the plots of the families perfkit.render.families places there, their own tables
below) and the kept runs' trends.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from perfkit.render import document, families
from perfkit.render.document import Collapsed, Columns, Document, Image, Section, Table, Text
from perfkit.render.hardware_chart import hardware_chart
from perfkit.render.plots_explain import kernel_charts
from perfkit.render.report_history import chart_title, charted_trends, history_section, spark
from perfkit.render.speedups import hardware_blocks, machine_names
from perfkit.render.tables import fmt_time, fmt_value
from perfkit.render.verdicts import Pointers, render, to_read, verdict_blocks, verdict_line
from perfkit.resultfile import payloads
from perfkit.resultfile.ceilings import Ceilings
from perfkit.resultfile.figures import TIME
from perfkit.resultfile.model import BenchmarkEntry, ResultSet, family_of
from perfkit.store import storage_folder
from perfkit.verdict import trends
from perfkit.verdict.judge import Comparison, Row, Verdict


def write_report(results: ResultSet, out: Path, comparison: Comparison | None = None,
                 baseline_name: str = "", kept: storage_folder.History | None = None,
                 first: Sequence[Section] = ()) -> Path:
    """Write ``report.md``, its PNG plots and ``report.html`` (the same sections, self-contained) into
    ``out``, and with a comparison ``verdicts.json`` (as ``perfkit compare --format json`` prints it); returns
    the markdown path.

    The page opens with the verdict line and the rows a person should read, each pointing at its family's
    section (its table beside its plots) and, with kept runs, at its trend; the rest is folded away or
    follows: the fingerprint, then one section per family, then the history. ``first``: sections that come
    before all of it (an A/B's table, which is the stronger evidence)."""
    out.mkdir(parents=True, exist_ok=True)
    kept = kept if kept is not None and len(kept) else None
    ceilings = Ceilings.of(results)
    verdicts = comparison.benchmark_verdicts() if comparison is not None else {}
    by_file = _family_sections(results, ceilings, out, verdicts,
                               {t.benchmark: t for t in trends.lines(kept.runs)} if kept else {})
    read = to_read(comparison) if comparison is not None else []
    charted = charted_trends(kept, read) if kept else {}
    title = f"perfkit report: {results.hardware_id}"
    when = results.datetime[:16].replace("T", " ")
    where = f"profile `{results.info.profile}`, device `{results.info.device or ''}`, run {when}"
    opening: list[document.Block] = [Text(f"{where}; not compared: no baseline given (--baseline)")]
    if comparison is not None:
        (out / "verdicts.json").write_text(render(comparison, "json"), encoding="utf-8")  # as compare prints
        title = verdict_line(comparison)
        opening = verdict_blocks(comparison, _pointers(by_file, charted),
                                 lead=[f"{where}; against `{baseline_name}`; every verdict: `verdicts.json`"],
                                 hardware=False, charts=kernel_charts(comparison.why, out))
    sections = [*first, Section("", tuple(opening)), _fingerprint_section(results)]
    unreadable = results.unreadable(payloads.FAMILIES)
    if unreadable:
        sections.append(Section("Records that could not be read", (
            Text("These entries keep their place in every comparison but lose their plot and table rows:"),
            Table.of(["record"], [[line] for line in unreadable]))))
    if comparison is not None and comparison.hardware_rows:
        sections.append(_hardware_section(comparison, out))
    sections += [section for family in by_file.values() for section in family]
    if kept is not None:
        sections += history_section(kept, out, charted)
    return document.write(Document(title, tuple(sections)), out)


def _hardware_section(cmp: Comparison, out: Path) -> Section:
    """Across hardware: the plot of measured against expected speedup, then every benchmark's row."""
    chart = hardware_chart(cmp.hardware_rows, *machine_names(cmp), out / "hardware.png")
    image: tuple[document.Block, ...] = (Image("measured vs expected speedup", chart),) if chart else ()
    return Section("Across hardware: measured vs expected speedup", (*image, *hardware_blocks(cmp)))


def _fingerprint_section(results: ResultSet) -> Section:
    """The machine and software the run measured, folded: what to check when a verdict surprises."""
    fingerprint = results.info.fingerprint.to_json()
    return Section("Fingerprint", (Collapsed(f"{len(fingerprint)} fields of {results.hardware_id}", (
        Table.of(["field", "value"], [[k, str(v)] for k, v in fingerprint.items()]),)),))


def _pointers(by_file: dict[str, list[Section]], charted: dict[tuple[str, str], trends.Trend]) -> Pointers:
    """Each row to read links its benchmark to its family's section (its plots) and, with kept runs, shows
    the trend of its figure where they hold it, linked to its chart."""

    def link(row: Row) -> str:
        family = family_of(row.benchmark)
        return f"[{row.benchmark}](#{document.anchor(family)})" if family in by_file else row.benchmark

    def trend(row: Row) -> document.Cell:
        found = charted.get((row.benchmark, row.figure))
        return spark(found, row.figure, chart_title(found, row.figure)) if found else ""

    return Pointers(link, trend if charted else None)


def _family_sections(results: ResultSet, found: Ceilings, out: Path, verdicts: dict[str, Verdict],
                     kept_times: dict[str, trends.Trend]) -> dict[str, list[Section]]:
    """Per bench file, in the order perfkit.render.families places them: its benchmarks' table beside the
    plots of the families its benchmarks carry, then those families' own tables below."""
    benches: dict[str, list[BenchmarkEntry]] = defaultdict(list)
    for bench in results.benchmarks:
        benches[bench.family].append(bench)
    out_sections: dict[str, list[Section]] = {}
    for title, shown in families.placed(results).items():
        plotted = [Image(heading, path) for family in shown for heading, path in family.draw(results, out)]
        tables = [table for family in shown for table in family.tabulate(results, found)]
        mine = benches.get(title, [])
        if not (mine or plotted or tables):
            continue
        left = [_bench_table(mine, verdicts, kept_times)] if mine else []
        out_sections[title] = [Section(title, (Columns(tuple(left), tuple(plotted)), *_metrics(mine))),
                               *(dataclasses.replace(t, level=t.level + 1) for t in tables)]
    return out_sections


def _bench_table(benches: list[BenchmarkEntry], verdicts: dict[str, Verdict],
                 kept_times: dict[str, trends.Trend]) -> Table:
    """A family's benchmarks, one line each to sit beside its plots: the verdict where compared, the time
    and its spread, the trend where runs are kept."""
    head = ["benchmark", *(["verdict"] if verdicts else []), "median", "IQR/median", "rounds",
            *(["trend"] if kept_times else [])]
    rows = []
    for bench in benches:
        noise = bench.iqr / bench.median if bench.median else 0.0
        verdict = [str(verdicts.get(bench.fullname, "-"))] if verdicts else []
        kept = kept_times.get(bench.fullname)
        trend: list[document.Cell] = [spark(kept, TIME) if kept else ""] if kept_times else []
        rows.append([bench.name, *verdict, fmt_time(bench.median), f"{noise:.1%}", str(bench.rounds), *trend])
    return Table.of(head, rows, kind="benchmarks")


def _metrics(benches: list[BenchmarkEntry]) -> list[document.Block]:
    """Every metric of a family's benchmarks, folded: too wide to sit beside a plot."""
    rows = [[b.name, ", ".join(f"{n} {fmt_value(m.value, m.unit)}" for n, m in b.metrics.items())]
            for b in benches if b.metrics]
    return [Collapsed(f"metrics of {len(rows)} benchmark(s)", (Table.of(["benchmark", "metrics"], rows),))
            ] if rows else []
