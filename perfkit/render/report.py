"""Rendering: comparison tables (text, markdown, JSON), the end-of-run summary and the run report with plots.

The only module that formats or draws; everything it shows was computed elsewhere. The run report is one
list of sections (perfkit.render.document) written as markdown and as a self-contained HTML page.
"""
from __future__ import annotations

import dataclasses
import json
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfkit.render import document, trend_display
from perfkit.render.document import (
    Collapsed,
    Columns,
    Document,
    Image,
    Section,
    Spark,
    Table,
    Text,
    markdown_sections,
)
from perfkit.render.plots import FAMILY_PLOTTERS, hardware_chart, history_chart
from perfkit.render.tables import fmt_change, fmt_time, fmt_value, text_table
from perfkit.resultfile import figures, seeds
from perfkit.resultfile.ceilings import Ceilings
from perfkit.resultfile.derived import scaling_runs
from perfkit.resultfile.figures import TIME
from perfkit.resultfile.metrics import MetricSpec
from perfkit.resultfile.model import BenchmarkEntry, ResultSet, family_of
from perfkit.resultfile.payloads import (
    FAMILIES,
    LARGE_BATCH_CLASSES,
    BatchCapacity,
    BatchEpoch,
    LargeBatch,
    LayerCapacity,
    Ppp,
    TimeToAccuracy,
)
from perfkit.store import storage_folder
from perfkit.verdict import changepoints, trends
from perfkit.verdict.across import AS_EXPECTED, HardwareRow, Prediction
from perfkit.verdict.judge import COUNT_MOVED, MIN_BASELINE_RUNS, Comparison, Policy, Row, Verdict

FORMATS = ("table", "markdown", "json")
_QUIET = {Verdict.UNCHANGED, Verdict.INFO}


def _percent(share: float) -> str:
    return f"{share * 100:.3g}%"


def verdict_meanings(policy: Policy) -> str:
    """What the verdict words mean under ``policy`` (its minimum effects and alpha), printed under every
    comparison."""
    gpu, other, alpha = policy.bound_threshold, policy.threshold, policy.alpha
    effects = f"{_percent(gpu)} for a GPU-bound benchmark, else {_percent(other)}" if gpu != other else \
        _percent(other)
    return (
        f"regressed/improved: beyond the minimum effect ({effects}, or a benchmark's own tolerance) and "
        "outside what the hardware's pooled run-to-run noise predicts, the night's family-wise false-alarm "
        f"rate held at {_percent(alpha)} (Holm over every gating figure; a confirmation's re-runs at "
        f"Bonferroni's level over the same); unchanged: the change's {_percent(1 - 2 * alpha)} interval lies "
        "inside the minimum effect; unknown: neither shown (more runs decide: --perfkit-confirm), or slower "
        "while other processes kept a quarter of the CPUs busy; not judged: fewer than "
        f"{MIN_BASELINE_RUNS} baseline runs of the figure; measured differently: the two sides measured it "
        "another way (a method version, a locked clock), shown side by side, not judged; info: a figure "
        "derived from the time, shown not judged; changed: a count that should not move did, or a ratio "
        "that should stay put moved significantly; MDE: the change this noise flags 80% of the time."
    )


#: What the verdict words mean across hardware, printed under a comparison of two machines.
ACROSS_MEANINGS = (
    f"Across hardware: as expected: the speedup lies within x{HardwareRow.NEAR} of the speedup expected of "
    f"it (a kernel's ceiling ratio, else the per-layer roofline model's); faster/slower: beyond that, within "
    f"x{HardwareRow.FAR}, or where nothing is expected, faster or slower on this machine beyond the minimum "
    f"effect and the noise; FAR from expected: beyond x{HardwareRow.FAR}; info: a gating figure other than "
    "a time (SM cycles, a memory peak) that differs on the other machine beyond the minimum effect and the "
    "noise, shown, not judged: another GPU spends its own on the same code; the across-hardware table gives "
    "each speedup, its expectation and where it came from."
)


def meanings(cmp: Comparison) -> str:
    """What the verdict words of ``cmp`` mean: across hardware, the words of a speedup too."""
    said = verdict_meanings(cmp.policy)
    return said if cmp.same_hardware else f"{ACROSS_MEANINGS} {said}"


def fmt_mde(mde: float | None) -> str:
    """An MDE as a percentage; past 1000% (two baseline runs leave one degree of freedom, whose t quantile
    after Holm's correction is astronomical) the digits say nothing more."""
    if mde is None:
        return "-"
    return f"{mde:.1%}" if mde <= 10 else ">1000%"


def _row_cells(row: Row) -> list[str]:
    p = "" if row.p_value is None else f"p={row.p_value:.3g}"
    note = "; ".join(x for x in (p, row.note) if x)
    mde = fmt_mde(row.mde) if row.gating else ""
    runs = f"{row.runs[0]}/{row.runs[1]}" if row.gating else ""
    return [row.verdict.value, row.benchmark, row.figure, fmt_value(row.baseline, row.unit),
            fmt_value(row.current, row.unit), fmt_change(row.change), mde, runs, note]


_HEAD = ["verdict", "benchmark", "figure", "baseline", "current", "change", "MDE", "runs b/c", "note"]


def how_much(ratio: float) -> str:
    """A time ratio (current over baseline) in words, "13.5x slower" or "1.25x faster": a bare 13.472
    does not say which way the machine differs."""
    if ratio > 1:
        return f"{ratio:.3g}x slower"
    return f"{1 / ratio:.3g}x faster" if 0 < ratio < 1 else "as fast"


def headline(cmp: Comparison) -> str:
    ratio = cmp.geomean_time_ratio
    geo = "" if ratio is None else f"; geomean time ratio {ratio:.3f}"
    if ratio is not None and not cmp.same_hardware:  # across machines it is the machines' difference: its way
        geo += f" (the current run {how_much(ratio)})"
    if cmp.not_judged:
        return (f"DIFFERENT machine under one hardware id ({cmp.current_id}: {cmp.not_judged}): not judged; "
                f"{len(cmp.hardware_rows)} benchmark(s) compared as across hardware{geo}")
    better = cmp.unknown_better()
    counts = ", ".join(f"{n} {v.value}" + (f" ({better} of them better)" if v is Verdict.UNKNOWN and better
                                           else "")
                       for v, n in cmp.counts().items()) or "nothing to compare"
    hw = (f"same hardware ({cmp.current_id})" if cmp.same_hardware
          else f"DIFFERENT hardware: baseline {cmp.baseline_id}, current {cmp.current_id}")
    return f"{hw}: {counts} (benchmarks){geo}"


def summary_lines(cmp: Comparison, baseline_name: str, limit: int = 40,
                  width: int | None = None) -> list[str]:
    """What the terminal shows at the end of a run: the headline, then every gating figure with a verdict
    worth reading and every count that moved; benchmarks not run, informational figures and the ungated are
    counted. The table is fitted to ``width`` columns where given."""
    lines = [f"perfkit: compared with {baseline_name}: {headline(cmp)}"]
    moved = [r for r in cmp.rows if (r.verdict in TO_READ[:-1] and not unsettled(r))
             or (r.verdict is Verdict.CHANGED and r.note.startswith(COUNT_MOVED))]
    if moved:
        table = text_table(_HEAD, [_row_cells(row) for row in moved[:limit]],
                           None if width is None else width - 2)
        lines += ["  " + line for line in table.splitlines()]
    if len(moved) > limit:
        lines.append(f"  ... and {len(moved) - limit} more; run `perfkit compare` for the whole table")
    counts = cmp.counts()
    for verdict, meaning in ((Verdict.MISSING, "in the baseline, not in this run (deselected or weekly)"),
                             (Verdict.NEW, "not in the baseline yet")):
        if counts.get(verdict):
            lines.append(
                f"  {counts[verdict]} {verdict.value} benchmark(s): {meaning}; `perfkit compare` lists them"
            )
    differ = sum(r.gating and r.verdict is Verdict.INFO for r in cmp.rows)
    if differ:
        lines.append(f"  {differ} gating figure(s) other than a time differ on the other machine (info: "
                     "shown, not judged); `perfkit compare` lists them")
    inside = sum(unsettled(r) for r in cmp.rows)
    if inside:
        lines.append(f"  {inside} unknown figure(s) moved less than their minimum effect, with an interval "
                     "that reaches beyond it (not shown unchanged); `perfkit compare` lists them")
    weak = cmp.weak()
    if weak:
        lines.append(
            f"  {len(weak)} gating figure(s) cannot detect a 10% change with these runs (MDE > 10%); "
            "more runs (baseline, kept or --perfkit-confirm) tighten them"
        )
    lines += [f"  fingerprint changed: {f} {old} -> {new}" for f, old, new in cmp.fingerprint_changes]
    if cmp.not_judged:
        lines.append("  `perfkit compare` lists each benchmark's speedup beside the ratio of its ceiling")
    if moved:
        lines.append("  " + meanings(cmp))
    return lines


def hardware_summary(rows: Sequence[HardwareRow]) -> str:
    """How many GPU benchmarks carry an expected speedup, and how many of those lie within x1.15 of it."""
    gpu = [h for h in rows if h.gpu]
    expected = [h for h in gpu if h.expected is not None]
    near = [h for h in expected if h.verdict == AS_EXPECTED]
    far = [h for h in expected if h.far]
    return (f"{len(expected)} of {len(gpu)} GPU benchmarks carry an expected speedup "
            f"({_share(expected, gpu)}); {len(near)} of them lie within x{HardwareRow.NEAR} of it "
            f"({_share(near, expected)}), "
            f"{len(far)} beyond x{HardwareRow.FAR}")


def _share(part: Sequence[object], whole: Sequence[object]) -> str:
    return f"{len(part) / len(whole):.0%}" if whole else "-"


def hardware_table(rows: Sequence[HardwareRow]) -> Table:
    """Each benchmark's speedup, its expectation, measured/expected, the word, and where the expectation came
    from (the model's split of the current machine's time into compute, memory and launch) or why none."""
    return Table.of(
        ["benchmark", "speedup", "expected", "measured/expected", "verdict", "expected from"],
        [[h.benchmark, f"{h.speedup:.3g}x", "-" if h.expected is None else f"{h.expected:.3g}x",
          "-" if h.ratio is None else f"x{h.ratio:.3g}", h.verdict or ("-" if h.gpu else "host work"),
          h.source()]
         for h in rows])


def _times(value: float | None) -> str:
    return "-" if value is None else f"x{value:.3g}"


def check_text(rows: Sequence[HardwareRow], reference: str, target: str, notes: Sequence[str] = ()) -> str:
    """``perfkit predict --device RESULTS``: the model checked against a device that was measured: each
    speedup from ``reference`` beside the expected one, and how far each device's measured time lies above
    the model's (its roofs are a lower bound); ``notes``: where the roofs came from."""
    head = ["benchmark", "speedup", "expected", "measured/expected", "verdict", f"measured/model {reference}",
            f"measured/model {target}", "expected from"]
    cells = [[h.benchmark, f"{h.speedup:.3g}x", "-" if h.expected is None else f"{h.expected:.3g}x",
              _times(h.ratio), h.verdict or ("-" if h.gpu else "host work"),
              *(_times(e) for e in (h.errors() or (None, None))), h.source()] for h in rows]
    said = "".join(f"; {note}" for note in notes)
    return "\n\n".join([f"The model from {reference} to {target} (measured): {hardware_summary(rows)}{said}",
                         text_table(head, cells)])


def prediction_text(found: Sequence[Prediction], device: str, notes: Sequence[str], reference: str,
                    checks: Mapping[str, Sequence[HardwareRow]]) -> str:
    """``perfkit predict --device KEY``: each benchmark's time on ``device``, from what ``reference``
    measured and the expected speedup, the model's own time there (a lower bound) and its split; beside it
    the model's speedup error from ``reference`` to each other device at hand (measured/expected)."""
    errors = {other: {h.benchmark: h for h in rows} for other, rows in checks.items()}
    head = ["benchmark", "figure", f"measured on {reference}", "expected speedup", f"predicted on {device}",
            "model's own time (lower bound)", "expected from", *[f"error to {other}" for other in errors]]
    cells = [[p.benchmark, p.expectation.figure, fmt_time(p.reference_s),
              "-" if p.expectation.expected is None else f"{p.expectation.expected:.3g}x",
              fmt_time(p.predicted_s), fmt_time(p.expectation.model.current.seconds if p.expectation.model
                                                else None), p.expectation.source(),
              *(_times(rows[p.benchmark].ratio) if p.benchmark in rows else "-" for rows in errors.values())]
             for p in found]
    gpu = [p for p in found if p.expectation.gpu]
    carried = [p for p in gpu if p.predicted_s is not None]
    lines = [(f"Predicted on {device} from {reference}: {len(carried)} of {len(gpu)} GPU benchmarks "
              f"({_share(carried, gpu)}); {'; '.join(notes)}")]
    lines += [f"The model's error measured from {reference} to {other}: {hardware_summary(rows)}"
              for other, rows in checks.items()]
    return "\n\n".join([*lines, text_table(head, cells)])


def _hardware_blocks(cmp: Comparison) -> list[document.Block]:
    """Across hardware: each benchmark's speedup beside the speedup expected of it."""
    if not cmp.hardware_rows:
        return []
    return [
        Text(
            "Across hardware: speedup (baseline time / current time; a ceiling's own benchmark: current "
            "rate / baseline rate; where a benchmark gates on another time or a rate, that figure) beside "
            "the speedup expected of it: a kernel's ceiling ratio on each side, else the per-layer roofline "
            f"model's ratio (perfkit.verdict.expected); {hardware_summary(cmp.hardware_rows)}"
        ),
        hardware_table(cmp.hardware_rows),
    ]


def _fingerprint_blocks(cmp: Comparison) -> list[document.Block]:
    if not cmp.fingerprint_changes:
        return []
    rows = [[field, str(old), str(new)] for field, old, new in cmp.fingerprint_changes]
    return [Text("Fingerprint differences"), Table.of(["field", "baseline", "current"], rows)]


def _weak_blocks(cmp: Comparison) -> list[document.Block]:
    weak = [[r.benchmark, r.figure, fmt_mde(r.mde), _tighten(r)] for r in cmp.weak()]
    if not weak:
        return []
    return [Text("Weak gating figures (MDE > 10%) and what would tighten them"),
            Table.of(["benchmark", "figure", "MDE", "to tighten"], weak)]


def _terminal_blocks(cmp: Comparison, show_unchanged: bool) -> list[document.Block]:
    """The terminal's comparison: the headline, the verdict table, the across-hardware table, fingerprint
    differences and the weak figures."""
    rows = [_row_cells(r) for r in cmp.rows if show_unchanged or r.verdict not in _QUIET]
    verdicts = [] if cmp.not_judged else [Table.of(_HEAD, rows)]
    blocks: list[document.Block] = [Text(headline(cmp)), *verdicts, *_hardware_blocks(cmp)]
    said = [] if cmp.not_judged else [Text(meanings(cmp))]
    return blocks + _fingerprint_blocks(cmp) + _weak_blocks(cmp) + said


#: The verdicts of the rows a person should read, worst first: a report and a job summary open with them.
TO_READ: tuple[Verdict, ...] = (Verdict.REGRESSED, Verdict.FAR, Verdict.SLOWER, Verdict.UNKNOWN,
                                Verdict.IMPROVED, Verdict.FASTER, Verdict.MEASURED_DIFFERENTLY,
                                Verdict.CHANGED)
#: The verdicts whose rows are folded away behind their count.
FOLDED: tuple[Verdict, ...] = (Verdict.NOT_JUDGED, Verdict.AS_EXPECTED, Verdict.UNCHANGED, Verdict.NEW,
                               Verdict.MISSING)
#: The MDE a gating figure should reach: the verdict line counts the figures that do.
MDE_GOAL = 0.05
#: GitHub keeps at most 1 MiB of job summary per step; what is left is room for lines a workflow adds.
SUMMARY_BYTES = 1_000_000


def verdict_line(cmp: Comparison) -> str:
    """The one line a report and a job summary open with: the counts, the fingerprint, and how small a
    change these runs could have seen."""
    changed = [name for name, _, _ in cmp.fingerprint_changes]
    fingerprint = f"fingerprint changed: {', '.join(changed)}" if changed else "fingerprint unchanged"
    return f"{headline(cmp)}; {fingerprint}; {_mde_words(cmp)}"


def _mde_words(cmp: Comparison) -> str:
    """How many gating figures could see a change of ``MDE_GOAL``, and the worst MDE."""
    compared = cmp.compared_gating()
    if not compared:
        return "no gating figure compared"
    known = [r.mde for r in compared if r.mde is not None]
    words = f"MDE ≤ {MDE_GOAL:.0%} for {sum(m <= MDE_GOAL for m in known)} of {len(compared)} gating figures"
    if known:
        words += f", worst {fmt_mde(max(known))}"
    unknown = len(compared) - len(known)
    return words + (f", {unknown} of unknown noise" if unknown else "")


def to_read(cmp: Comparison) -> list[Row]:
    """The rows a person should read (:data:`TO_READ`), worst verdict first, by benchmark within one; not the
    figures inside their minimum effect that are unknown only for want of evidence (:func:`unsettled`)."""
    return sorted((r for r in cmp.rows if r.verdict in TO_READ and not unsettled(r)),
                  key=lambda r: TO_READ.index(r.verdict))


def unsettled(row: Row) -> bool:
    """A gating figure inside its minimum effect whose interval reaches beyond it: ``unknown``, never shown
    unchanged, but nothing moved to chase; folded behind its count so the rows that did move open the page."""
    return row.verdict is Verdict.UNKNOWN and row.minimum is not None and not row.beyond_minimum


@dataclass(frozen=True)
class Pointers:
    """Where a report's rows to read point: ``link`` gives the benchmark cell (a link to its family's
    plots); ``trend``, with kept runs, a cell before the note (a sparkline that links to its chart)."""

    link: Callable[[Row], str]
    trend: Callable[[Row], document.Cell] | None = None


@dataclass(frozen=True)
class Cut:
    """What a size limit leaves out of a comparison's sections: the folded rows, the rows to read past
    ``keep``; ``why`` ends the sentence that says so."""

    folded: bool = False
    keep: int | None = None
    why: str = ""


def verdict_blocks(cmp: Comparison, pointers: Pointers | None = None, show_info: bool = False,
                   lead: Sequence[str] = (), cut: Cut = Cut(), hardware: bool = True) -> list[document.Block]:
    """What follows the verdict line: ``lead``, the rows to read, then folded away (``<details>``) the
    unchanged, new and missing rows, the gating figures that differ on another machine (and with
    ``show_info`` every informational one), the across-hardware
    table (unless ``hardware`` is False: a report gives it a section of its own) and the weak figures; the
    fingerprint differences and what the verdicts mean below them."""
    blocks: list[document.Block] = [Text(line) for line in lead]
    blocks += _rows_to_read(cmp, pointers, cut)
    counts = cmp.counts()
    inside = [r for r in cmp.rows if unsettled(r)]
    if inside:
        blocks.append(_folded(f"{len(inside)} unknown figure(s) inside the minimum effect, their "
                              "interval beyond it", [Table.of(_HEAD, [_row_cells(r) for r in inside])], cut))
    for verdict in (*FOLDED, Verdict.INFO):
        rows = [r for r in cmp.rows if r.verdict is verdict and (show_info or r.gating)]
        if rows:
            benchmarks = counts.get(verdict)
            summary = (f"{benchmarks} {verdict.value} benchmark(s), {len(rows)} figure(s)" if benchmarks
                       else f"{len(rows)} {verdict.value} figure(s)")
            blocks.append(_folded(summary, [Table.of(_HEAD, [_row_cells(r) for r in rows])], cut))
    across = _hardware_blocks(cmp) if hardware else []
    if across:
        blocks.append(_folded(f"across hardware: {hardware_summary(cmp.hardware_rows)}", across, cut))
    weak = _weak_blocks(cmp)
    if weak:
        blocks.append(_folded(f"{len(cmp.weak())} weak gating figure(s): MDE > 10%", weak, cut))
    return blocks + _fingerprint_blocks(cmp) + [Text(meanings(cmp))]


def _rows_to_read(cmp: Comparison, pointers: Pointers | None, cut: Cut) -> list[document.Block]:
    """The rows a person should read, one table; ``cut.keep`` of them where a size limit says so."""
    rows = to_read(cmp)
    if cmp.not_judged:
        return [Text(f"Not judged: the two sides ran on different machines under one hardware id "
                     f"({cmp.not_judged}); the across-hardware table gives each benchmark's speedup.")]
    if not rows:
        return [Text("Nothing to read: no gating figure moved beyond its minimum effect, no count changed.")]
    head = [*_HEAD[:-1], *(["trend"] if pointers and pointers.trend else []), _HEAD[-1]]
    shown = rows if cut.keep is None else rows[: cut.keep]
    cells = [_read_cells(r, pointers) for r in shown]
    blocks: list[document.Block] = [Table.of(head, cells, kind="verdicts")]
    if len(shown) < len(rows):
        blocks.append(Text(f"{len(rows) - len(shown)} more row(s) to read cut {cut.why}."))
    return blocks


def _read_cells(row: Row, pointers: Pointers | None) -> list[document.Cell]:
    """A row's verdict cells with the report's pointers: the benchmark as a link, the trend before the note
    (the note last: HTML clips it)."""
    cells: list[document.Cell] = list(_row_cells(row))
    if pointers is None:
        return cells
    trend = [pointers.trend(row)] if pointers.trend else []
    return [cells[0], pointers.link(row), *cells[2:-1], *trend, cells[-1]]


def _folded(summary: str, blocks: list[document.Block], cut: Cut) -> document.Collapsed:
    """``blocks`` behind ``summary``; a sentence in their place where a size limit cut them."""
    return Collapsed(summary, (Text(f"Rows cut {cut.why}."),) if cut.folded else tuple(blocks))


def render(cmp: Comparison, fmt: str, show_unchanged: bool = True, width: int | None = None) -> str:
    """A comparison as a terminal table (fitted to ``width`` columns where given), markdown (the verdict line,
    the rows to read, the rest folded) or JSON, both whole; ``show_unchanged``: every row in the terminal's
    table, the informational ones too (folded) in markdown."""
    if fmt == "json":
        return json.dumps(cmp.to_json(), indent=2)
    if fmt == "markdown":
        blocks = verdict_blocks(cmp, show_info=show_unchanged)
        return markdown_sections([Section(verdict_line(cmp), tuple(blocks))])
    return document.plain_text(_terminal_blocks(cmp, show_unchanged), width)


def summary_markdown(cmp: Comparison, notes: Sequence[str] = (), budget: int = SUMMARY_BYTES) -> str:
    """A CI job summary (``--perfkit-summary``): the verdict line, ``notes``, the rows to read, the rest
    folded; at most ``budget`` bytes (GitHub drops a step's summary past 1 MiB): the folded rows are cut
    first, then rows to read from the end, each cut said."""
    why = (f"to keep this job summary under {budget:,} bytes (GitHub keeps 1 MiB a step); `perfkit compare` "
           "lists every row")

    def text(cut: Cut) -> str:
        blocks = verdict_blocks(cmp, lead=notes, cut=cut)
        return markdown_sections([Section(verdict_line(cmp), tuple(blocks))])

    def fits(cut: Cut) -> bool:
        return len(text(cut).encode()) <= budget

    for cut in (Cut(), Cut(folded=True, why=why)):
        if fits(cut):
            return text(cut)
    low, high = 0, len(to_read(cmp))  # the most rows to read that fit lie in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(Cut(True, middle, why)) else (low, middle - 1)
    return _clipped(text(Cut(True, low, why)), budget)


def _clipped(text: str, budget: int) -> str:
    """``text`` cut to ``budget`` bytes with a line that says so: the last resort of a budget smaller than
    the verdict line and its counts."""
    if len(text.encode()) <= budget:
        return text
    tail = "\n\n(cut here: the summary's size limit)\n"
    return text.encode()[: max(0, budget - len(tail.encode()))].decode(errors="ignore") + tail


def _tighten(row: Row) -> str:
    """What would lower a figure's minimum detectable effect."""
    if row.mde is None:
        return ("save a baseline from several runs (perfkit baseline save r1.json r2.json r3.json) or keep "
                "runs (--benchmark-autosave)")
    if row.runs[1] < 3:
        return (
            f"--perfkit-confirm 3 (this side holds {row.runs[1]} run(s)), and more kept runs of the hardware"
        )
    return "a less noisy measurement: a longer timed region, CUDA-graph or batched timing, an L2 flush"


# ---- the run report -------------------------------------------------------------------------

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
    families = _family_sections(results, ceilings, out, verdicts,
                                {t.benchmark: t for t in trends.lines(kept.runs)} if kept else {})
    read = to_read(comparison) if comparison is not None else []
    charted = _charted_trends(kept, read) if kept else {}
    title = f"perfkit report: {results.hardware_id}"
    when = results.datetime[:16].replace("T", " ")
    where = f"profile `{results.info.profile}`, device `{results.info.device or ''}`, run {when}"
    opening: list[document.Block] = [Text(f"{where}; not compared: no baseline given (--baseline)")]
    if comparison is not None:
        (out / "verdicts.json").write_text(render(comparison, "json"), encoding="utf-8")  # as compare prints
        title = verdict_line(comparison)
        opening = verdict_blocks(comparison, _pointers(families, charted),
                                 lead=[f"{where}; against `{baseline_name}`; every verdict: `verdicts.json`"],
                                 hardware=False)
    sections = [*first, Section("", tuple(opening)), _fingerprint_section(results)]
    unreadable = results.unreadable(FAMILIES)
    if unreadable:
        sections.append(Section("Records that could not be read", (
            Text("These entries keep their place in every comparison but lose their plot and table rows:"),
            Table.of(["record"], [[line] for line in unreadable]))))
    if comparison is not None and comparison.hardware_rows:
        sections.append(_hardware_section(comparison, out))
    sections += [section for family in families.values() for section in family]
    if kept is not None:
        sections += _history_section(kept, out, charted)
    return document.write(Document(title, tuple(sections)), out)


def _hardware_section(cmp: Comparison, out: Path) -> Section:
    """Across hardware: the plot of measured against expected speedup, then every benchmark's row."""
    chart = hardware_chart(cmp.hardware_rows, *machine_names(cmp), out / "hardware.png")
    image: tuple[document.Block, ...] = (Image("measured vs expected speedup", chart),) if chart else ()
    return Section("Across hardware: measured vs expected speedup", (*image, *_hardware_blocks(cmp)))


def machine_names(cmp: Comparison) -> tuple[str, str]:
    """The baseline's and the current machine's names: their hardware ids, or where one id names both (CPUs
    of two generations, PerfkitInfo.machine_change) what tells them apart: "cpu-amd-epyc-2cpu over
    cpu-amd-epyc-2cpu" says nothing."""
    if cmp.baseline_id != cmp.current_id:
        return cmp.baseline_id, cmp.current_id
    told = [(str(old), str(new)) for name, old, new in cmp.fingerprint_changes
            if name in ("cpu_model", "cpu_signature")]
    if not told:
        return cmp.baseline_id, cmp.current_id
    return (", ".join(old for old, _ in told), ", ".join(new for _, new in told))


def _fingerprint_section(results: ResultSet) -> Section:
    """The machine and software the run measured, folded: what to check when a verdict surprises."""
    fingerprint = results.info.fingerprint.to_json()
    return Section("Fingerprint", (Collapsed(f"{len(fingerprint)} fields of {results.hardware_id}", (
        Table.of(["field", "value"], [[k, str(v)] for k, v in fingerprint.items()]),)),))


def _pointers(families: dict[str, list[Section]], charted: dict[tuple[str, str], trends.Trend]) -> Pointers:
    """Each row to read links its benchmark to its family's section (its plots) and, with kept runs, shows
    the trend of its figure where they hold it, linked to its chart."""

    def link(row: Row) -> str:
        family = family_of(row.benchmark)
        return f"[{row.benchmark}](#{document.anchor(family)})" if family in families else row.benchmark

    def trend(row: Row) -> document.Cell:
        found = charted.get((row.benchmark, row.figure))
        return _spark(found, row.figure, _chart_title(found, row.figure)) if found else ""

    return Pointers(link, trend if charted else None)


def _charted_trends(kept: storage_folder.History, rows: list[Row]) -> dict[tuple[str, str], trends.Trend]:
    """The trend of each row to read whose figure the kept runs hold, keyed by (benchmark, figure)."""
    found: dict[tuple[str, str], trends.Trend] = {}
    for figure in dict.fromkeys(r.figure for r in rows):
        names = {r.benchmark for r in rows if r.figure == figure}
        found |= {(t.benchmark, figure): t for t in trends.trends(kept.runs, figure=figure, names=names)}
    return found


def _chart_title(trend: trends.Trend, figure: str) -> str:
    return f"{figure} of {trend.benchmark}"


def _family_sections(results: ResultSet, ceilings: Ceilings, out: Path, verdicts: dict[str, Verdict],
                     kept_times: dict[str, trends.Trend]) -> dict[str, list[Section]]:
    """Per family (a bench file), those with plots first in their order (plots.FAMILY_PLOTTERS), then the
    rest in the run's: its benchmarks' table beside its plots, then its own tables below."""
    benches: dict[str, list[BenchmarkEntry]] = defaultdict(list)
    for bench in results.benchmarks:
        benches[bench.family].append(bench)
    out_sections: dict[str, list[Section]] = {}
    for family in dict.fromkeys([*FAMILY_PLOTTERS, *_FAMILY_TABLES, *benches]):
        plotted = [Image(title, path) for plotter in FAMILY_PLOTTERS.get(family, ())
                   for title, path in plotter(results, out)]
        tables = _FAMILY_TABLES[family](results, ceilings) if family in _FAMILY_TABLES else []
        if not (benches.get(family) or plotted or tables):
            continue
        mine = benches.get(family, [])
        left = [_bench_table(mine, verdicts, kept_times)] if mine else []
        out_sections[family] = [Section(family, (Columns(tuple(left), tuple(plotted)), *_metrics(mine))),
                                *(dataclasses.replace(t, level=t.level + 1) for t in tables)]
    return out_sections


def _cell(bench: BenchmarkEntry, spec: MetricSpec, fmt: str = "{:.3g}") -> str:
    """A metric as a table cell: times in their unit, other figures in ``fmt``; "-" where it is absent."""
    metric = bench.metrics.get(spec.name)
    return (
        "-"
        if metric is None
        else (fmt_time(metric.value) if metric.unit == "s" else fmt.format(metric.value))
    )


def _ppp_section(results: ResultSet, ceilings: Ceilings, top: int = 8) -> list[Section]:
    """Platform percent of peak per model and batch, then each model's slowest layers."""
    runs = list(results.family(Ppp))
    if not runs:
        return []
    summary = [[p.model, str(p.batch), fmt_time(b.median), _cell(b, figures.TFLOPS),
                _cell(b, figures.SHARE_OF_PEAK, "{:.1%}"), _cell(b, figures.PREDICTED_S),
                _cell(b, figures.SUM_OF_LAYERS_S), _cell(b, figures.LAUNCH_OVERHEAD_S),
                _cell(b, figures.CONV_FLOP_SHARE, "{:.2%}")] for b, p in runs]
    first = runs[0][1]
    out = [
        Section(
            "Platform percent of peak (forward)",
            (
                Text(
                    f"Convolutions run {first.precision}, linear layers {first.linear_precision}; PPP = "
                    f"time at the measured "
                    "peaks of that math / measured time. PALEO prediction at the datasheet peak (PPP 1). "
                    f"{first.convention}."
                ),
                Table.of(
                    [
                        "model",
                        "batch",
                        "measured",
                        "TFLOP/s",
                        "PPP",
                        "PALEO predicted",
                        "sum of layers",
                        "launch overhead",
                        "conv share",
                    ],
                    summary,
                ),
            ),
        )
    ]
    for _, p in runs:
        rows = []
        for layer in sorted(p.layers, key=lambda r: -r.seconds)[:top]:
            tflops = layer.flops / layer.seconds / 1e12
            precision = p.precision_of(layer.type)
            peak = (
                ceilings.value(figures.matmul_ceiling(precision).name) if precision and layer.flops else None
            )
            rows.append([layer.name, layer.type, fmt_time(layer.seconds), f"{tflops:.3g}",
                         "-" if peak is None else f"{tflops / peak:.1%}", fmt_time(layer.predicted_s)])
        out.append(Section(f"{p.model} batch {p.batch}: the {top} slowest layers", (
            Table.of(["layer", "type", "time", "TFLOP/s", "PPP", "PALEO predicted"], rows),), level=3))
    return out


#: Where a file's runs of a figure spread more than this around their median, a table shows their median and
#: range instead of the newest run's value.
SPREAD_SHOWN = 0.10


def _over_runs(values: Sequence[float], newest: str, fmt: Callable[[float], str]) -> str:
    """``newest`` (the one run's cell) for one run; over several, their median, and its range "(min to max)"
    where they spread more than SPREAD_SHOWN: one run's value of a figure that moved more than 30x between
    runs of one job (the NCCL kernel time waits for the slowest rank) reads as a property of the job."""
    if len(values) < 2:
        return newest
    middle, low, high = statistics.median(values), min(values), max(values)
    if high - low <= SPREAD_SHOWN * abs(middle):
        return fmt(middle)
    return f"{fmt(middle)} ({fmt(low)} to {fmt(high)})"


def _scaling_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
    """DDP and DataParallel per workload and GPU count, with the three communication figures side by side;
    over a baseline's runs where they disagree."""
    runs = scaling_runs(results)
    if not runs:
        return []
    kept = results.runs()

    def cell(bench: BenchmarkEntry, spec: MetricSpec, fmt: str = "{:.3g}") -> str:
        return _over_runs(kept[bench.fullname].get(spec.name, ()), _cell(bench, spec, fmt), fmt.format)

    rows = [
        [
            r.method,
            r.workload,
            str(r.gpus),
            _over_runs(kept[b.fullname].get(TIME, ()), fmt_time(b.median), fmt_time),
            cell(b, figures.IMAGES_PER_S, "{:,.0f}"),
            cell(b, figures.SPEEDUP, "{:.2f}"),
            cell(b, figures.SCALING_EFFICIENCY, "{:.1%}"),
            cell(b, figures.COMPUTE_MS),
            cell(b, figures.COMM_EXPOSED_MS),
            cell(b, figures.NCCL_KERNEL_MS),
            cell(b, figures.NCCL_EXPOSED_MS),
            cell(b, figures.COMM_SUBTRACTION_MS),
            cell(b, figures.BUSBW_RATIO, "{:.2f}"),
            cell(b, figures.PEAK_ALLOCATED_MIB, "{:,.0f}"),
        ]
        for b, r in runs
    ]
    head = ["method", "workload", "GPUs", "step", "images/s", "speedup", "efficiency", "compute ms (no_sync)",
            "exposed comm ms (step - no_sync)", "NCCL kernel ms", "NCCL exposed ms", "course subtraction ms",
            "DDP busbw / raw", "peak MiB per GPU"]
    return [
        Section(
            "Data-parallel scaling",
            (
                Text(
                    "Speedup = images/s over the 1-GPU run of the same job in the same results; efficiency "
                    "= speedup / GPUs. Communication three ways: the step minus the same step under "
                    "`no_sync`; torch.profiler's NCCL kernel time per step and the part no compute kernel "
                    "overlapped; the course's subtraction (n-GPU step minus the 1-GPU time for the same "
                    "per-GPU batch). Where the results hold several runs "
                    "(a baseline), each cell is the median of its runs, with their range (min to max) where "
                    f"they spread more than {SPREAD_SHOWN:.0%}: the NCCL kernel time includes waiting for "
                    "the slowest rank and moved more than 30x between runs of one job on four H100s. Each "
                    "figure's median is its own, so a row's figures need not add up."
                ),
                Table.of(head, rows),
            ),
        )
    ]


def _large_batch_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
    """Seed 003 Q4: each run's accuracy per epoch and its mean over the epochs (beside the seed's figure where
    the run repeats its GPUs, batch, rate and epochs); a run that ended near chance says so, since its loss
    alone does not tell a reader."""
    runs = list(results.family(LargeBatch))
    if not runs:
        return []
    rows = []
    for bench, run in runs:
        accuracies = [e.train_accuracy for e in run.history]
        quoted = (
            seeds.LARGE_BATCH_V100.get((run.world, run.global_batch))
            if run.rule == "same" and len(accuracies) == seeds.LARGE_BATCH_V100_EPOCHS
            else None
        )
        at_chance = bool(accuracies) and accuracies[-1] < 1.5 / LARGE_BATCH_CLASSES
        rows.append([
            str(run.world), str(run.global_batch), run.rule, f"{run.lr:g}", str(run.warmup_steps),
            (" ".join(f"{a:.0%}" for a in accuracies) + (" (chance)" if at_chance else "")) or "-",
            (f"{statistics.fmean(accuracies):.1%}" if accuracies else "-")
            + (f" ({quoted[1]:.1%})" if quoted else ""),
            f"{run.history[-1].train_loss:.4g}" if run.history else "-",
            _cell(bench, figures.TEST_ACCURACY, "{:.1%}"),
            _cell(bench, figures.TRAIN_S),
        ])
    seed = ", ".join(f"batch {batch} on {gpus} GPU(s): {accuracy:.1%} (loss {loss:g})"
                     for (gpus, batch), (loss, accuracy) in seeds.LARGE_BATCH_V100.items())
    return [
        Section(
            "Large-batch training (same epochs)",
            (
                Text(
                    f"Data: `{runs[0][1].data}`; ResNet-18. Seed 003 Q4.1 (V100s, CIFAR-10, "
                    f"{seeds.LARGE_BATCH_V100_EPOCHS} epochs, the same learning rate), its 'Avg Train "
                    f"Accuracy': {seed}; in brackets beside a run of ours with the same GPUs, batch, rate "
                    "and epochs. Its Q4.2 answer is to scale the learning rate with the batch (the "
                    "linear-warmup rows). A run marked (chance) ended within 1.5x of guessing "
                    f"({1 / LARGE_BATCH_CLASSES:.0%} for {LARGE_BATCH_CLASSES} classes): it did not learn."
                ),
                Table.of(
                    [
                        "GPUs",
                        "global batch",
                        "rule",
                        "lr",
                        "warm-up steps",
                        "train accuracy by epoch",
                        "mean train accuracy (seed 003)",
                        "final train loss",
                        "test accuracy",
                        "train time",
                    ],
                    rows,
                ),
            ),
        )
    ]


def _capacity_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
    found = list(results.family(LayerCapacity))
    if not found:
        return []
    rows = [[rec.knob, rec.memory, str(rec.num_conv), str(rec.num_fc), rec.stopped_by, str(len(rec.probes)),
             _cell(bench, figures.FORWARD_MEAN_MS), "-" if rec.split_at is None else _split_cell(bench, rec)]
            for bench, rec in found]
    seed = ", ".join(f"{c} conv + {f} fc: " + (f"{ms} ms" if ms else "out of memory")
                     for (c, f), ms in seeds.LAYER_STACK_1080TI.items())
    split = ", ".join(
        f"{gpu} {c} conv + {f} fc ({ms} ms)" for gpu, (c, f, ms) in seeds.LAYER_SPLIT_1080TI.items()
    )
    return [
        Section(
            "Layer-stack capacity (seed 000 Task 1)",
            (
                Text(
                    f"Input {list(found[0][1].input_shape)}; each layer keeps "
                    f"{found[0][1].kept_mib_per_layer:.3g} MiB for backward. Seed 000 on a GTX 1080 Ti "
                    f"(10.91 GiB): {seed}; split across two: {split} (GPU1 ran out first)."
                ),
                Table.of(
                    ["search", "memory", "conv", "fc", "stopped by", "probes", "forward mean (ms)", "split"],
                    rows,
                ),
            ),
        )
    ]


def _split_cell(bench: BenchmarkEntry, rec: LayerCapacity) -> str:
    """Where the two-GPU stack splits, each device's peak, and the forward by part (GPU 0, the copy, GPU
    1)."""
    peaks = " / ".join(f"{m / 1024:.2f}" for m in rec.peak_mib_per_device)
    parts = " + ".join(_cell(bench, spec) for spec in (figures.GPU0_FORWARD_MS, figures.TRANSFER_MS,
                                                       figures.GPU1_FORWARD_MS))
    return f"layer {rec.split_at}; peaks {peaks} GiB; GPU 0 + copy + GPU 1: {parts} ms"


def _batch_sweep_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
    epochs = sorted(results.family(BatchEpoch), key=lambda item: (item[1].variant, item[1].batch))
    if not epochs:
        return []
    rows = [[rec.variant, str(rec.batch), f"{rec.epoch_s:.3g} s", f"{rec.images_per_s:,.0f}",
             "-" if rec.peak_mib is None else f"{rec.peak_mib:,.0f} MiB",
             f"{seeds.BATCH_EPOCH_V100[rec.batch]} s" if rec.batch in seeds.BATCH_EPOCH_V100 else "-"]
            for _, rec in epochs]
    largest = [f"largest batch that fits: {cap.largest} ({cap.stopped_by})"
               for _, cap in results.family(BatchCapacity)]
    return [
        Section(
            "Epoch time vs batch size (seeds 003 Q1, 004 2.1)",
            (
                Text(
                    f"{epochs[0][1].model} on `{epochs[0][1].data}`; "
                    + ("; ".join(largest) or "largest batch not searched")
                    + f". Seed 003's V100 ran out of memory at {seeds.BATCH_OOM_V100}."
                ),
                Table.of(["variant", "batch", "epoch", "images/s", "peak", "seed 003 V100 epoch"], rows),
            ),
        )
    ]


def _tta_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
    found = list(results.family(TimeToAccuracy))
    if not found:
        return []
    rows = []
    for bench, rec in found:
        reached = [r.tta_s for r in rec.runs if r.reached and r.tta_s is not None]
        median = f"{statistics.median(reached):.3g} s" if reached else "-"
        sd = bench.value(figures.SHIFTED_ACCURACY_SD)
        rows.append(
            [
                rec.model,
                rec.variant,
                str(rec.batch),
                f"{len(reached)}/{len(rec.runs)}",
                median,
                _cell(bench, figures.TTA_COV, "{:.1%}"),
                _cell(bench, figures.EPOCHS_TO_TARGET, "{:.3g}"),
                _cell(bench, figures.IMAGES_PER_S, "{:,.0f}"),
                _cell(bench, figures.IMAGES_PER_S_VS_NAIVE, "{:.2f}x"),
                _cell(bench, figures.GPU_UTIL_PCT, "{:.0f}%"),
                _cell(bench, figures.SHIFTED_ACCURACY, "{:.1%}") + (f" ± {sd:.1%}" if sd is not None else ""),
            ]
        )
    first = found[0][1]
    return [
        Section(
            "Time to accuracy (seed 002 Problem 2)",
            (
                Text(
                    f"Data `{first.data}`, target {first.target:.0%}, at most {first.epoch_cap} epochs; "
                    f"shifted set `{first.shifted_data or 'none'}`. TTA: first step to the end of the "
                    "evaluation that reached the target."
                ),
                Table.of(
                    [
                        "model",
                        "variant",
                        "batch",
                        "reached",
                        "TTA median",
                        "CoV",
                        "epochs",
                        "images/s",
                        "vs naive",
                        "GPU util",
                        "shifted accuracy",
                    ],
                    rows,
                ),
            ),
        )
    ]


def _ceilings_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
    if not len(ceilings):
        return []
    rows = []
    for key in ceilings:
        found = ceilings.found[key]
        rows.append(
            [
                key,
                f"{found.value:.4g}",
                found.describe(),
                "-" if found.datasheet is None else f"{found.datasheet:.4g}",
                "-" if not found.datasheet else f"{found.value / found.datasheet:.1%}",
            ]
        )
    spec = results.info.datasheet
    source = f"Datasheet: {spec.source}." if spec else "No datasheet entry for this machine."
    return [
        Section(
            "Ceilings",
            (
                Table.of(["ceiling", "measured", "from", "datasheet", "share of datasheet"], rows),
                Text(source),
            ),
        )
    ]


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
        trend: list[document.Cell] = [_spark(kept, TIME) if kept else ""] if kept_times else []
        rows.append([bench.name, *verdict, fmt_time(bench.median), f"{noise:.1%}", str(bench.rounds), *trend])
    return Table.of(head, rows, kind="benchmarks")


def _metrics(benches: list[BenchmarkEntry]) -> list[document.Block]:
    """Every metric of a family's benchmarks, folded: too wide to sit beside a plot."""
    rows = [[b.name, ", ".join(f"{n} {fmt_value(m.value, m.unit)}" for n, m in b.metrics.items())]
            for b in benches if b.metrics]
    return [Collapsed(f"metrics of {len(rows)} benchmark(s)", (Table.of(["benchmark", "metrics"], rows),))
            ] if rows else []


#: How many of the newest kept runs a sparkline draws.
SPARK_RUNS = 20


def _spark(trend: trends.Trend, figure: str, chart: str = "") -> Spark:
    """The last ``SPARK_RUNS`` kept values of a figure as a sparkline, labelled with the first and last and
    broken where a new method of measuring it begins; ``chart``: the title of the section it links to."""
    values = tuple(v for _, v in trend.points[-SPARK_RUNS:])
    first = len(trend.points) - len(values)
    label = (f"{figure} over the last {len(values)} kept run(s): {fmt_value(values[0], trend.unit)} to "
             f"{fmt_value(values[-1], trend.unit)}" + ("; click for its chart" if chart else ""))
    return Spark(values, label, document.anchor(chart) if chart else "",
                 breaks=tuple(i - first for i in trend.breaks if i > first))


#: A family's own tables beyond its benchmarks' (sections placed under the family's).
_FAMILY_TABLES: dict[str, Callable[[ResultSet, Ceilings], list[Section]]] = {
    "test_ceilings": _ceilings_section,
    "test_ppp": _ppp_section,
    "test_data_parallel": _scaling_section,
    "test_large_batch": _large_batch_section,
    "test_capacity": _capacity_section,
    "test_batch_sweep": _batch_sweep_section,
    "test_time_to_accuracy": _tta_section,
}


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


def _history_section(kept: storage_folder.History, out: Path, charted: dict[tuple[str, str], trends.Trend],
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
        charts += [Section(_chart_title(trend, figure), (Image(trend.benchmark, chart),), level=3)
                   for trend, chart in zip(drawn, trend_charts(drawn, out, figure))]
    return [Section(f"History: {len(kept)} kept run(s) of {', '.join(kept.hardware_ids())}", tuple(blocks)),
            *charts]
