"""``perfkit ab --explain`` and bisect's answer: the benchmarks an A/B found regressed or improved run once
more on each side with ``--perfkit-explain``, and their kernel summaries are compared (perfkit.explain).

The profiled runs come after the judged pairs and are never judged: a profiler stays in its process and slows
the launch-bound work after it (CUPTI), so the verdict rests on the pairs alone and the explanation only reads
the work. A side that cannot profile (a checkout older than ``--perfkit-explain``, a benchmark that fails in
the extra run) says so in the explanation; the A/B's verdicts stand.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from perfkit.ab.report import AbReport
from perfkit.ab.run import AB_JSON, Side, run_side
from perfkit.errors import BuildError
from perfkit.explain import why
from perfkit.explain.why import Why
from perfkit.resultfile.model import ResultSet
from perfkit.store import baselines

#: The option that profiles one more call of each benchmark's work after its timed rounds.
EXPLAIN = "--perfkit-explain"


def explained(report: AbReport, base: Side, head: Side, out: Path,
              say: Callable[[str], None] = lambda _: None) -> AbReport:
    """``report`` with each regressed or improved benchmark's explanation, from one profiled run of those
    benchmarks on each side (``out``: ``base-explain.json``, ``head-explain.json``, and ``ab.json`` written
    again with the explanations); unchanged where nothing moved."""
    flagged = report.flagged()
    if not flagged:
        return report
    names = ", ".join(name for name, _ in flagged)
    say(f"profiling {names} once more at {base.ref} and at {head.ref}, to say which kernels moved")
    answered = dataclasses.replace(report, explained=_explanations(report, base, head, out))
    baselines.write_json_atomically(out / AB_JSON, answered.to_json())
    return answered


def _explanations(report: AbReport, base: Side, head: Side, out: Path) -> tuple[Why, ...]:
    """The flagged benchmarks' explanations from one profiled run on each side, or why there are none."""
    flagged = report.flagged()
    runs: dict[str, ResultSet | None] = {}
    for side in (base, head):
        try:
            runs[side.label] = run_side(side, [name for name, _ in flagged], None,
                                        out / f"{side.label}-explain.json", (EXPLAIN,))
        except BuildError as error:  # an older checkout, or a benchmark failing in the profiled run
            return _without(flagged, f"the {side.label} side could not be profiled ({error})")
    before, after = runs["base"], runs["head"]
    if before is None or after is None:
        return _without(flagged, f"the {'base' if before is None else 'head'} side has none of them")
    return why.of(before, after, flagged)


def _without(flagged: list[tuple[str, str]], reason: str) -> tuple[Why, ...]:
    return tuple(Why(name, verdict, missing=reason) for name, verdict in flagged)
