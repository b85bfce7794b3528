"""``perfkit ab --explain`` and bisect's answer: the benchmarks an A/B found regressed or improved run once
more on each side with ``--perfkit-explain``, and their kernel summaries are compared (perfkit.explain).

The profiled runs come after the judged pairs and are never judged: a profiler in a timed run can slow what
runs after it (CUPTI), so the verdict rests on the pairs alone and the explanation only reads the work.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from perfkit.ab.report import AbReport
from perfkit.ab.run import Side, run_side
from perfkit.explain import why
from perfkit.explain.why import Why

#: The option that profiles one more call of each benchmark's work after its timed rounds.
EXPLAIN = "--perfkit-explain"


def explained(report: AbReport, base: Side, head: Side, out: Path) -> AbReport:
    """``report`` with each regressed or improved benchmark's explanation, from one profiled run of those
    benchmarks on each side (``out``: ``base-explain.json`` and ``head-explain.json``); unchanged where
    nothing moved."""
    flagged = report.flagged()
    if not flagged:
        return report
    names = [name for name, _ in flagged]
    runs = {side.label: run_side(side, names, None, out / f"{side.label}-explain.json", (EXPLAIN,))
            for side in (base, head)}
    if runs["base"] is None or runs["head"] is None:
        lacking = "base" if runs["base"] is None else "head"
        return dataclasses.replace(report, explained=tuple(
            Why(name, verdict, missing=f"the {lacking} side has none of these benchmarks to profile")
            for name, verdict in flagged))
    return dataclasses.replace(report, explained=why.of(runs["base"], runs["head"], flagged))
