"""A comparison in words: what the verdict words mean, the headline and the verdict line, the terminal's
table, the rows a person should read with the rest folded (a report's opening, a CI job summary within
GitHub's size limit), and the comparison as markdown or JSON."""
from __future__ import annotations

import json
import math
import textwrap
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfkit.explain.diff import TABLE_HEAD
from perfkit.explain.why import Why
from perfkit.render import document
from perfkit.render.document import Collapsed, Section, Table, Text, markdown_sections
from perfkit.render.speedups import ACROSS_MEANINGS, hardware_blocks, hardware_summary
from perfkit.render.tables import fmt_change, fmt_value, text_table
from perfkit.verdict.comparison import FEW_RUNS, ONE_MACHINE, sharp_goal
from perfkit.verdict.judge import (
    MIN_BASELINE_RUNS,
    MOST_RUNS,
    NEVER_VARIED,
    Comparison,
    Policy,
    Row,
    Verdict,
    counted,
)
from perfkit.verdict.noise import TAIL_RUNS

FORMATS = ("table", "markdown", "json")
_QUIET = {Verdict.UNCHANGED, Verdict.INFO}


def _percent(share: float) -> str:
    return f"{share * 100:.3g}%"


def verdict_meanings(policy: Policy) -> str:
    """What the verdict words mean under ``policy`` (its minimum effects and alpha), printed under every
    comparison."""
    gpu, other, alpha = policy.bound_threshold, policy.threshold, policy.alpha
    shown = policy.bound_threshold_shown
    narrower = "" if shown == gpu else \
        f", {_percent(shown)} where {TAIL_RUNS} or more runs of its own let its tails be read"
    effects = (f"{_percent(gpu)} for a GPU-bound benchmark{narrower}, else {_percent(other)}"
               if gpu != other or narrower else _percent(other))
    return (
        f"regressed/improved: beyond the minimum effect ({effects}, or a benchmark's own tolerance; wider "
        "where one run cannot see it for noise between hosts that the benchmark declares, or between GPUs "
        "of one model that the baseline's machines show, said beside it) "
        "and outside what the hardware's pooled run-to-run noise predicts, the night's family-wise "
        f"false-alarm rate held at {_percent(alpha)} (Holm over every gating figure; a confirmation's "
        f"re-runs at Bonferroni's level over the same); unchanged: the change's {_percent(1 - 2 * alpha)} "
        "interval lies inside the minimum effect; unknown: neither shown (more runs decide: "
        "--perfkit-confirm), or slower while other processes kept a quarter of the CPUs busy; not judged: "
        f"fewer than {MIN_BASELINE_RUNS} baseline runs of the figure; measured differently: the two sides "
        "measured it another way (a method version, a locked clock), shown side by side, not judged; info: "
        "shown, not judged: a figure derived from the one a benchmark gates on (its time, where it gates on"
        " another figure), or a benchmark that gates on nothing (declared informational); changed: a count "
        "that should not move did, or a ratio that should stay put moved significantly; MDE: the change "
        "this noise flags 80% of the time (after --perfkit-confirm, the first run picking it and the "
        "re-runs confirming it)."
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
    if cmp.time_ratio_by_kind:  # a slower host moves the host-bound times alone: say which moved
        kinds = [f"{k.kind} {k.ratio:.3f} of {k.benchmarks}" for k in cmp.time_ratio_by_kind]
        geo += f" ({kinds[0]} benchmarks, {', '.join(kinds[1:])})"
    if ratio is not None and not cmp.same_hardware:  # across machines it is the machines' difference: its way
        geo += f" (the current run {how_much(ratio)})"
    if cmp.not_judged:
        return (f"DIFFERENT machine under one hardware id ({cmp.current_id}: {cmp.not_judged}): not judged; "
                f"{len(cmp.hardware_rows)} benchmark(s) compared as across hardware{geo}")
    counts = _counts_words(cmp)
    hw = (f"same hardware ({cmp.current_id})" if cmp.same_hardware
          else f"DIFFERENT hardware: baseline {cmp.baseline_id}, current {cmp.current_id}")
    return f"{hw}: {counts}{geo}"


def _counts_words(cmp: Comparison) -> str:
    """The benchmarks' counts by verdict as one phrase, "of 8 benchmarks, 6 unknown (2 of them better), 2
    unchanged": the noun said once up front, so no count carries a second bracket after its own."""
    counts = cmp.counts()
    if not counts:
        return "nothing to compare"
    better = cmp.unknown_better()
    words = ", ".join(f"{n} {v.value}" + (f" ({better} of them better)" if v is Verdict.UNKNOWN and better
                                          else "") for v, n in counts.items())
    within = cmp.not_judged_within()
    has = "has" if within == 1 else "have"
    also = f"; {counted(within, 'benchmark')} also {has} a gating figure not judged" if within else ""
    return f"of {counted(sum(counts.values()), 'benchmark')}, {words}{also}"


def summary_lines(cmp: Comparison, baseline_name: str, limit: int = 40,
                  width: int | None = None) -> list[str]:
    """What the terminal shows at the end of a run: the headline, then every gating figure with a verdict
    worth reading and every count that moved; benchmarks not run, informational figures and the ungated are
    counted. The table is fitted to ``width`` columns where given."""
    lines = [f"perfkit: compared with {baseline_name}: {headline(cmp)}"]
    if cmp.sitting:
        lines.append(f"  {cmp.sitting}")
    moved = to_read(cmp)  # the markdown's rows to read, a changed ratio among them: the headline counts it
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
    one_machine = sum(r.gating and r.note == ONE_MACHINE for r in cmp.rows)
    differ = sum(r.gating and r.verdict is Verdict.INFO for r in cmp.rows) - one_machine
    if differ:
        lines.append(f"  {differ} gating figure(s) other than a time differ on the other machine (info: "
                     "shown, not judged); `perfkit compare` lists them")
    if one_machine:
        lines.append(f"  {one_machine} gating figure(s) measured on one machine only (info: shown, not "
                     "judged)")
    inside = sum(unsettled(r) for r in cmp.rows)
    if inside:
        lines.append(f"  {inside} unknown figure(s) moved less than their minimum effect, with an interval "
                     "that reaches beyond it (not shown unchanged); `perfkit compare` lists them")
    better = sum(hopeful(r) for r in cmp.rows)
    if better:
        lines.append(f"  {better} unknown figure(s) moved beyond their minimum effect the better way, not "
                     "significantly; `perfkit compare` lists them")
    if cmp.weak():
        lines.append(f"  {len(cmp.weak())} gating figure(s) cannot detect a 10% change with these runs "
                     f"(MDE > 10%): {_weak_words(cmp)}")
    lines += _why_lines(cmp, width)
    lines += [f"  fingerprint changed: {f} {old} -> {new}" for f, old, new in cmp.fingerprint_changes]
    if cmp.not_judged:
        lines.append("  `perfkit compare` lists each benchmark's speedup beside the ratio of its ceiling")
    if moved:
        lines.append("  " + meanings(cmp))
    return lines


def _weak_words(cmp: Comparison) -> str:
    """What would sharpen the weak figures: more runs, or for those a few more runs of this code would not
    (to 10%, or 1.5 times a wider minimum effect of their own) a less noisy measurement; those at their own
    wider minimum effect already need nothing."""
    weak, beyond = cmp.weak(), cmp.beyond_runs()
    unjudged = [r for r in weak if r.verdict in UNJUDGED]
    weak = tuple(r for r in weak if r.verdict not in UNJUDGED)
    settled = [r for r in weak if r.runs_to_see is not None and r.runs_to_see <= r.runs[1]]
    limited = [r for r in weak if r.mde_limited_by]
    parts = []
    if runs := len(weak) - len(beyond) - len(settled) - len(limited):
        parts.append(f"more runs (baseline, kept or --perfkit-confirm) tighten {runs}")
    if limited:
        parts.append(f"{len(limited)} held by tonight's run, not its noise (a disturbed run, the run's "
                     "common host shift, runs that never varied)")
    if beyond:
        parts.append(f"{len(beyond)} need more than {FEW_RUNS} runs of this code, more baseline runs or a "
                     "less noisy measurement")
    if settled:
        parts.append(f"{len(settled)} sit at a wider minimum effect of their own")
    if unjudged:
        parts.append(f"{len(unjudged)} not judged or measured differently (each one's note says what would "
                     "let it be judged)")
    return "; ".join(parts) + " (`perfkit compare` says what would tighten each)"


def _why_lines(cmp: Comparison, width: int | None) -> list[str]:
    """Each flagged benchmark's reading of its kernels (fitted to ``width``); where none could be read, one
    line on how to get them, not one per benchmark."""
    explained = [w for w in cmp.why if w.explanation is not None]
    if cmp.why and not explained:
        return [("  which kernels moved: a run with --perfkit-explain (a --perfkit-confirm adds one) says, "
                 "against a baseline saved from such runs")]
    lines = []
    for w in explained:
        said = f"  why {w.benchmark.split('::')[-1]}: {w.reading}"
        lines += textwrap.wrap(said, width - 2, subsequent_indent="    ") if width else [said]
    return lines


def _fingerprint_blocks(cmp: Comparison) -> list[document.Block]:
    if not cmp.fingerprint_changes:
        return []
    rows = [[field, str(old), str(new)] for field, old, new in cmp.fingerprint_changes]
    return [Text("Fingerprint differences"), Table.of(["field", "baseline", "current"], rows)]


def _weak_blocks(cmp: Comparison) -> list[document.Block]:
    weak = [[r.benchmark, r.figure, fmt_mde(r.mde), _tighten(r)] for r in cmp.weak()]
    if not weak:
        return []
    return [Text("Weak gating figures (MDE > 10%, or none tonight) and what would tighten them"),
            Table.of(["benchmark", "figure", "MDE", "to tighten"], weak)]


def explained_blocks(whys: Sequence[Why], limit: int = 5, charts: Mapping[str, Path] | None = None
                     ) -> list[document.Block]:
    """Each regressed or improved benchmark's reading of its kernel summaries (a comparison's, an A/B's),
    and where the two sides were compared the kernels, copies and launches that moved most
    (perfkit.explain); ``charts``: a bar chart's file per benchmark, shown under its table (a report)."""
    if not whys:
        return []
    blocks: list[document.Block] = [
        Text("Why they moved (kernel summaries, perfkit.explain)"),
        Table.of(["benchmark", "verdict", "reading"], [[w.benchmark, w.verdict, w.reading] for w in whys])]
    for w in whys:
        if w.explanation is not None and w.explanation.compared:
            blocks += [Text(w.benchmark),
                       Table.of(list(TABLE_HEAD), [list(r) for r in w.explanation.rows_for_table(limit)])]
            if charts and w.benchmark in charts:
                blocks.append(document.Image(f"the kernels that moved most in {w.benchmark}",
                                             charts[w.benchmark]))
    return blocks


def _terminal_blocks(cmp: Comparison, show_unchanged: bool) -> list[document.Block]:
    """The terminal's comparison: the headline, the verdict table, why the flagged benchmarks moved, the
    across-hardware table, fingerprint differences and the weak figures."""
    # the baseline's benchmarks this run did not hold (a -k selection, the weekly ones) after those it did
    shown = sorted((r for r in cmp.rows if show_unchanged or r.verdict not in _QUIET),
                   key=lambda r: r.verdict is Verdict.MISSING)
    rows = [_row_cells(r) for r in shown]
    verdicts = [] if cmp.not_judged else [Table.of(_HEAD, rows)]
    sitting = [Text(cmp.sitting)] if cmp.sitting else []
    blocks: list[document.Block] = [Text(headline(cmp)), *sitting, *verdicts, *explained_blocks(cmp.why),
                                    *hardware_blocks(cmp)]
    said = [] if cmp.not_judged else [Text(meanings(cmp))]
    return blocks + _fingerprint_blocks(cmp) + _weak_blocks(cmp) + said


#: The verdicts of the rows a person should read, worst first: a report and a job summary open with them.
TO_READ: tuple[Verdict, ...] = (Verdict.REGRESSED, Verdict.FAR, Verdict.SLOWER, Verdict.UNKNOWN,
                                Verdict.IMPROVED, Verdict.FASTER, Verdict.MEASURED_DIFFERENTLY,
                                Verdict.CHANGED)


#: The verdicts whose rows are folded away behind their count.
FOLDED: tuple[Verdict, ...] = (Verdict.NOT_JUDGED, Verdict.AS_EXPECTED, Verdict.UNCHANGED, Verdict.NEW,
                               Verdict.MISSING)


#: The verdicts of figures given no test tonight: what would let them be judged is in their note, not noise.
UNJUDGED: tuple[Verdict, ...] = (Verdict.NOT_JUDGED, Verdict.MEASURED_DIFFERENTLY)


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
    without = Counter(_no_mde(r) for r in compared if r.mde is None)
    return words + "".join(f", {n} without one ({why})" for why, n in without.most_common())


def _no_mde(row: Row) -> str:
    """Why a gating figure has no MDE tonight, in the verdict line's few words."""
    if row.verdict in UNJUDGED:
        return row.verdict.value
    if row.mde_limited_by == NEVER_VARIED:
        return "runs that never varied"
    if row.mde_limited_by:
        return "a disturbed run holds their slowdowns back"
    return "no noise known to weigh them"


def to_read(cmp: Comparison) -> list[Row]:
    """The rows a person should read (:data:`TO_READ`), worst verdict first, by benchmark within one; not the
    figures inside their minimum effect that are unknown only for want of evidence (:func:`unsettled`)."""
    return sorted((r for r in cmp.rows if worth_reading(r)), key=lambda r: TO_READ.index(r.verdict))


def unsettled(row: Row) -> bool:
    """A gating figure inside its minimum effect whose interval reaches beyond it: ``unknown``, never shown
    unchanged, but nothing moved to chase; folded behind its count so the rows that did move open the page."""
    return row.verdict is Verdict.UNKNOWN and row.minimum is not None and not row.beyond_minimum


def hopeful(row: Row) -> bool:
    """A gating figure that moved beyond its minimum effect the better way, not significantly and by less
    than 1.5x: ``unknown``, and nothing to chase in a regression suite; folded behind its count so the rows
    that may be worse open the page. A move of 1.5x or more is read whichever way (a benchmark that
    stopped doing its work reads much faster)."""
    return (row.verdict is Verdict.UNKNOWN and row.minimum is not None and row.beyond_minimum
            and not row.worse and row.change is not None and abs(math.log1p(row.change)) < math.log(1.5))


def worth_reading(row: Row) -> bool:
    """A row of :data:`TO_READ`'s verdicts that is neither unsettled nor hopeful."""
    return row.verdict in TO_READ and not unsettled(row) and not hopeful(row)


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
                   lead: Sequence[str] = (), cut: Cut = Cut(), hardware: bool = True,
                   charts: Mapping[str, Path] | None = None) -> list[document.Block]:
    """What follows the verdict line: ``lead``, the rows to read, then folded away (``<details>``) the
    unchanged, new and missing rows, the gating figures that differ on another machine (and with
    ``show_info`` every informational one), the across-hardware
    table (unless ``hardware`` is False: a report gives it a section of its own) and the weak figures; the
    fingerprint differences and what the verdicts mean below them. ``charts`` (a report's): the explanations
    shown open, each flagged benchmark's kernel chart under its table."""
    blocks: list[document.Block] = [Text(line) for line in (*lead, *([cmp.sitting] if cmp.sitting else []))]
    blocks += _rows_to_read(cmp, pointers, cut)
    if cmp.why and charts is not None and not cut.folded:  # a report: the kernels and their charts open
        blocks += explained_blocks(cmp.why, charts=charts)
    elif cmp.why:
        blocks.append(_folded(f"why {len(cmp.why)} regressed or improved benchmark(s) moved: their kernels",
                              explained_blocks(cmp.why), cut))
    counts = cmp.counts()
    inside = [r for r in cmp.rows if unsettled(r)]
    if inside:
        blocks.append(_folded(f"{len(inside)} unknown figure(s) inside the minimum effect, their "
                              "interval beyond it", [Table.of(_HEAD, [_row_cells(r) for r in inside])], cut))
    better = [r for r in cmp.rows if hopeful(r)]
    if better:
        blocks.append(_folded(f"{len(better)} unknown figure(s) that moved the better way, not significantly",
                              [Table.of(_HEAD, [_row_cells(r) for r in better])], cut))
    gated = {r.benchmark for r in cmp.rows if r.gating}
    declared = sum(v is Verdict.INFO and name not in gated for name, v in cmp.benchmark_verdicts().items())
    for verdict in (*FOLDED, Verdict.INFO):
        rows = [r for r in cmp.rows if r.verdict is verdict and (show_info or r.gating)]
        if rows:
            benchmarks = counts.get(verdict)
            summary = (f"{benchmarks} {verdict.value} benchmark(s), {len(rows)} figure(s)" if benchmarks
                       else f"{len(rows)} {verdict.value} figure(s)")
            if verdict is Verdict.INFO and declared and not show_info:
                summary += f"; {declared} of the benchmarks gate on nothing (declared informational)"
            blocks.append(_folded(summary, [Table.of(_HEAD, [_row_cells(r) for r in rows])], cut))
    across = hardware_blocks(cmp) if hardware else []
    if across:
        blocks.append(_folded(f"across hardware: {hardware_summary(cmp.hardware_rows)}", across, cut))
    weak = _weak_blocks(cmp)
    if weak:
        blocks.append(_folded(f"{len(cmp.weak())} weak gating figure(s): MDE > 10%, or none tonight", weak,
                              cut))
    return blocks + _fingerprint_blocks(cmp) + [Text(meanings(cmp))]


def _rows_to_read(cmp: Comparison, pointers: Pointers | None, cut: Cut) -> list[document.Block]:
    """The rows a person should read, one table; ``cut.keep`` of them where a size limit says so."""
    rows = to_read(cmp)
    if cmp.not_judged:
        return [Text(f"Not judged: the two sides ran on different machines under one hardware id "
                     f"({cmp.not_judged}); the across-hardware table gives each benchmark's speedup.")]
    if not rows:
        return [Text(_nothing_to_read(cmp))]
    head = [*_HEAD[:-1], *(["trend"] if pointers and pointers.trend else []), _HEAD[-1]]
    shown = rows if cut.keep is None else rows[: cut.keep]
    cells = [_read_cells(r, pointers) for r in shown]
    blocks: list[document.Block] = [Table.of(head, cells, kind="verdicts")]
    if len(shown) < len(rows):
        blocks.append(Text(f"{len(rows) - len(shown)} more row(s) to read cut {cut.why}."))
    return blocks


def _nothing_to_read(cmp: Comparison) -> str:
    """Why no row is to read, in words that claim only what was judged: the figures that moved the better way
    and those not judged (a one-run baseline entry, too few degrees of freedom) are folded below, whatever
    they moved."""
    better = sum(hopeful(r) for r in cmp.rows)
    unjudged = sum(r.gating and r.verdict is Verdict.NOT_JUDGED for r in cmp.rows)
    words = "Nothing to read: no judged gating figure moved the worse way beyond its minimum effect"
    if better:
        words += f", {counted(better, 'figure')} moved the better way beyond it, not significantly"
    if unjudged:
        words += f"; {counted(unjudged, 'gating figure')} not judged, folded below"
    return words + "; no count changed."


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
    """What would bring a weak figure's MDE to its goal (10%, or 1.5 times a wider minimum effect of its own):
    a few more runs of this code where they would, else a less noisy measurement or more baseline runs; a
    figure not judged or measured differently, what its note says would let it be judged."""
    if row.verdict in UNJUDGED:
        return row.note
    if row.mde_limited_by:
        return row.mde_limited_by
    if row.mde is None:
        return ("no noise is known for it: save a baseline from several runs (perfkit baseline save "
                "r1.json r2.json r3.json) or keep runs (--benchmark-autosave)")
    goal = fmt_mde(sharp_goal(row.minimum or 0.0))
    if row.runs_to_see is not None and row.runs_to_see <= row.runs[1]:
        return f"nothing: its own minimum effect, {row.minimum:.0%}, is its floor, and it sees about that"
    quieter = "a less noisy measurement (a longer timed region, CUDA-graph or batched timing, an L2 flush)"
    if row.runs_to_see is None:
        return (f"{quieter} or more baseline runs: by this baseline's noise even {MOST_RUNS} runs of this "
                f"code would not reliably see {goal}")
    if row.runs_to_see > FEW_RUNS:
        return (f"{quieter}: by this baseline's noise about {row.runs_to_see} runs of this code would see "
                f"{goal}")
    return (f"about {row.runs_to_see} runs of this code judged together (replicates, or --perfkit-confirm "
            f"{row.runs_to_see} where the first run flags it) would see {goal}; more baseline runs too")
