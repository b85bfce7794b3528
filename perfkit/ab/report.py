"""What ``perfkit ab`` reports (``ab.json``), as one frozen, versioned record, and how it reads.

Why typed: the report travels from the A/B through ``perfkit bisect``, the CLI, ``perfkit report`` and a
pull request's job summary; as a dict each of them read keys by hand and kept the older files' defaults in
its own copy. :meth:`AbReport.from_json` reads every version written so far (:data:`VERSION` and the
unversioned files of before 2026-11-27, whose rows may name no figure and which may lack the spending and
interval texts), :meth:`AbReport.to_json` writes the newest.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from perfkit.errors import UsageError
from perfkit.explain.why import Why
from perfkit.render.document import Section, Table, Text, markdown_sections, plain_text
from perfkit.render.tables import fmt_change
from perfkit.render.verdicts import explained_blocks, fmt_mde
from perfkit.resultfile.figures import TIME
from perfkit.verdict.judge import Verdict
from perfkit.verdict.paired_test import PairedRow

#: The newest ab.json layout; an ab.json without a version is version 1.
VERSION = 2
#: What a version-1 file that says nothing of its looks did: the test at the full alpha after every pair.
UNSPENT = "the test taken at the full alpha after every pair (alpha not spent)"
UNSAID_INTERVAL = "MDE: the smallest change called significant"
#: A row's numbers that may be missing (no test yet, or a tie).
OPTIONAL_NUMBERS = ("change", "p_value", "mde")

Pairs = Mapping[str, Mapping[str, tuple[tuple[float, float], ...]]]


@dataclass(frozen=True)
class SideRef:
    """One side of the A/B: the ref it was given as and the commit it named."""

    ref: str
    commit: str


@dataclass(frozen=True)
class MinimumEffect:
    gpu_bound: float
    other: float


@dataclass(frozen=True)
class AbReport:
    """The A/B after its last pair: the sides, the pairs run in their order, the test, a row per gating
    figure, each figure's (base, head) values per pair, and the benchmarks only one side has."""

    base: SideRef
    head: SideRef
    seed: int
    orders: tuple[str, ...]
    rounds: int
    benches: tuple[str, ...]
    test: str
    why: str
    alpha: float
    spending: str
    interval: str
    minimum_effect: MinimumEffect
    benchmarks: tuple[PairedRow, ...]
    pairs: Pairs
    not_judged: tuple[str, ...] = ()
    new: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    correction: str = "holm"
    #: each regressed or improved benchmark's kernels on the two sides (``--explain``; bisect's answer)
    explained: tuple[Why, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "base": asdict(self.base),
            "head": asdict(self.head),
            "seed": self.seed,
            "orders": list(self.orders),
            "rounds": self.rounds,
            "benches": list(self.benches),
            "test": self.test,
            "why": self.why,
            "correction": self.correction,
            "alpha": self.alpha,
            "spending": self.spending,
            "interval": self.interval,
            "minimum_effect": asdict(self.minimum_effect),
            "benchmarks": [{**asdict(row), "verdict": row.verdict.value} for row in self.benchmarks],
            "pairs": {name: {figure: [list(pair) for pair in values] for figure, values in figures.items()}
                      for name, figures in self.pairs.items()},
            "not_judged": list(self.not_judged),
            "new": list(self.new),
            "missing": list(self.missing),
            "explained": [w.to_json() for w in self.explained],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> AbReport:
        """Any version written so far (version 1 files may lack what later perfkit added); a field missing
        from a version that has it is a KeyError."""
        version = raw.get("version", 1)
        if not isinstance(version, int):
            raise TypeError(f"its version {version!r} is not a number")
        if version > VERSION:
            raise ValueError(f"ab.json version {version} is newer than this perfkit reads ({VERSION}); "
                             "upgrade perfkit")
        return cls(
            base=SideRef(**raw["base"]),
            head=SideRef(**raw["head"]),
            seed=int(raw["seed"]),
            orders=tuple(raw["orders"]),
            rounds=int(raw["rounds"]),
            benches=tuple(raw["benches"]),
            test=raw["test"],
            why=raw["why"],
            correction=raw["correction"] if version > 1 else raw.get("correction", "holm"),
            alpha=float(raw["alpha"]),
            spending=raw["spending"] if version > 1 else raw.get("spending", UNSPENT),
            interval=raw["interval"] if version > 1 else raw.get("interval", UNSAID_INTERVAL),
            minimum_effect=MinimumEffect(**raw["minimum_effect"]),
            benchmarks=tuple(_row(row) for row in raw["benchmarks"]),
            pairs={name: {figure: tuple((float(b), float(h)) for b, h in values)
                          for figure, values in figures.items()}
                   for name, figures in (raw["pairs"] if version > 1 else raw.get("pairs", {})).items()},
            not_judged=tuple(raw["not_judged"] if version > 1 else raw.get("not_judged", ())),
            new=tuple(raw["new"]),
            missing=tuple(raw["missing"]),
            explained=tuple(Why.from_json(w) for w in raw.get("explained", ())),  # added without a version
        )

    def regressed(self) -> list[str]:
        """The benchmarks found worse beyond their minimum effect, significantly, in any gating figure."""
        return sorted({row.benchmark for row in self.benchmarks if row.verdict is Verdict.REGRESSED})

    def flagged(self) -> list[tuple[str, str]]:
        """(benchmark, verdict) of each benchmark regressed or improved in a gating figure, regressed first
        where its figures disagree: what ``--explain`` profiles."""
        moved = [row for row in self.benchmarks if row.verdict in (Verdict.REGRESSED, Verdict.IMPROVED)]
        verdicts = {row.benchmark: row.verdict.value for row in moved}
        verdicts |= {row.benchmark: row.verdict.value for row in moved if row.verdict is Verdict.REGRESSED}
        return sorted(verdicts.items())


def _row(raw: Mapping[str, Any]) -> PairedRow:
    """A row as written, its numbers checked to be numbers (the table shows them); one of before 2026-11-26
    names no figure: it judged the time only."""
    known = {f.name for f in fields(PairedRow)}
    values = {key: value for key, value in raw.items() if key in known}
    optional = {key: None if raw.get(key) is None else float(raw[key]) for key in OPTIONAL_NUMBERS}
    return PairedRow(**{**values, **optional, "pairs": int(raw["pairs"]), "minimum": float(raw["minimum"]),
                        "verdict": Verdict(raw["verdict"]), "figure": raw.get("figure", TIME)})


def read(path: Path) -> AbReport:
    """The ``ab.json`` an A/B wrote; a file that is not one is a UsageError that says so."""
    try:
        return AbReport.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{path}: not an A/B result of `perfkit ab` ({exc}); leave it out or run "
                         "the A/B again") from None


def _label(row: PairedRow) -> str:
    return row.benchmark if row.figure == TIME else f"{row.benchmark} {row.figure}"


def progress(report: AbReport) -> str:
    """One line after a pair: its number, its order and each figure's change and verdict so far."""
    verdicts = ", ".join(f"{_label(row)}" + (f" {row.change:+.1%}" if row.change is not None else "") +
                         f" {row.verdict.value}" for row in report.benchmarks)
    return f"pair {len(report.orders)}/{report.rounds} ({report.orders[-1]}): {verdicts}"


def section(report: AbReport) -> Section:
    """The A/B as one section: the two sides, the pairs run and their order, which test and why, then one
    row per benchmark, new and missing ones last (:func:`render` and ``perfkit report`` show it)."""
    base, head, effect = report.base, report.head, report.minimum_effect
    title = f"A/B: base {base.ref} ({base.commit[:10]}) against head {head.ref} ({head.commit[:10]})"
    ran = (f"{len(report.orders)} of {report.rounds} pairs run of {' '.join(report.benches)}, "
           f"orders {' '.join(report.orders) or '-'} (ABBA from seed {report.seed})"
           if report.benches else "The change touches no bench file: nothing was run.")
    test = (f"test: {report.test}, Holm over all of them at alpha {report.alpha:.0%}: {report.why}; "
            f"minimum effect {effect.gpu_bound:.0%} GPU-bound, {effect.other:.0%} otherwise")
    looks = f"looks: {report.spending}, out of a budget of {report.rounds} rounds; {report.interval}"
    rows = [[row.benchmark, row.figure, row.verdict.value, fmt_change(row.change), f"{row.minimum:.0%}",
             fmt_mde(row.mde), row.pairs, row.note] for row in report.benchmarks]
    rows += [[name, "", "info", "", "", "", "", "no gating figure: shown, not judged"]
             for name in report.not_judged]
    rows += [[name, "", "new", "", "", "", "", "head only"] for name in report.new]
    rows += [[name, "", "missing", "", "", "", "", "base only"] for name in report.missing]
    if not report.benches:  # nothing run: no test, no looks, no rows to describe
        return Section(title, (Text(ran),))
    table = Table.of(["benchmark", "figure", "verdict", "change", "min", "MDE", "pairs", "note"], rows)
    return Section(title, (Text(ran), Text(test), Text(looks), table, *explained_blocks(report.explained)))


def render(report: AbReport, fmt: str = "table") -> str:
    """The A/B table for a terminal or as markdown (a CI job summary)."""
    part = section(report)
    if fmt == "markdown":
        return markdown_sections([part])
    return plain_text([Text(part.title), *part.blocks])
