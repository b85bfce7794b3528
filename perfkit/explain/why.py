"""Why a benchmark moved: its kernel summaries on the two sides of a comparison, compared.

The judge asks for it for every benchmark it calls regressed or improved; each gets the explanation of its
two summaries (perfkit.explain.diff), or the sentence that says why there is none (a baseline saved before
summaries, a run without ``--perfkit-explain``, a profiler that could not start), and the verdict stands
either way.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perfkit.explain import record
from perfkit.explain.diff import Explanation, explain
from perfkit.explain.summary import Unavailable
from perfkit.resultfile.model import BenchmarkEntry, ResultSet

NO_BASELINE_SUMMARY = "no kernel summary in the baseline"


@dataclass(frozen=True)
class Why:
    """A flagged benchmark's explanation, or why it has none."""

    benchmark: str
    verdict: str
    explanation: Explanation | None = None
    missing: str = ""

    @property
    def reading(self) -> str:
        return self.explanation.reading if self.explanation is not None else self.missing

    def to_json(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "verdict": self.verdict, "reading": self.reading,
                "explanation": None if self.explanation is None else self.explanation.to_json()}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Why:
        """As :meth:`to_json` wrote it (an A/B's ``ab.json`` keeps its explanations)."""
        explained = raw.get("explanation")
        if explained is None:
            return cls(str(raw["benchmark"]), str(raw["verdict"]), missing=str(raw["reading"]))
        return cls(str(raw["benchmark"]), str(raw["verdict"]), Explanation.from_json(explained))


def of(baseline: ResultSet, current: ResultSet, flagged: Sequence[tuple[str, str]]) -> tuple[Why, ...]:
    """Each of ``flagged`` (benchmark, verdict) explained by its summaries in ``baseline`` and ``current``;
    a summary that cannot be compared says so, and never costs the comparison its verdicts."""
    before, after = baseline.by_name(), current.by_name()
    found = []
    for name, verdict in flagged:
        try:
            found.append(_one(before, after, name, verdict))
        except Exception as error:  # noqa: BLE001 - an explanation is an aside: the verdict stands without it
            found.append(Why(name, verdict, missing=f"its kernel summaries could not be compared ({error})"))
    return tuple(found)


def _one(before: Mapping[str, BenchmarkEntry], after: Mapping[str, BenchmarkEntry], name: str,
         verdict: str) -> Why:
    now = record.of(after[name]) if name in after else Unavailable("not in this run")
    then = record.of(before[name]) if name in before else Unavailable("not in the baseline")
    if isinstance(now, Unavailable):
        return Why(name, verdict, missing=f"no kernel summary in this run: {now.reason}")
    if isinstance(then, Unavailable):
        return Why(name, verdict, missing=f"{NO_BASELINE_SUMMARY} ({then.reason})")
    if not (then.kernels or then.copies or then.launches or now.kernels or now.copies or now.launches):
        work = "kernel, copy" if now.device == "cuda" else "operator"
        return Why(name, verdict, missing=(f"no {work} recorded on either side: its time is the host's own "
                                           "work (Python), which a kernel summary does not break down"))
    return Why(name, verdict, explain(then, now))
