"""A result set's machine ceilings, read by one rule everywhere (derived figures, comparisons, the report).

The ceilings family records each measured ceiling as a metric named by its key (``copy_bandwidth_gbps``,
``matmul_tflops_<precision>``, and on a GPU ``<one_thread|one_block>_copy_k<K>_gbps``, one multiprocessor's
copy rate, and ``first_touch_k<K>_gbps``, a grid's first touch of managed pages). A set's ceiling is the
**median over its runs** of that figure (one run of a 2-vCPU VM copied at 74 GB/s, the other eight at
34-47), else what its run stored (a file that holds no ceiling benchmark keeps its run's), else what a
baseline of the same machine lends (the one it is judged against now, or the one it was judged against when
written). The datasheet figure stands beside each that a datasheet lists.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from perfkit.resultfile.figures import CEILINGS
from perfkit.resultfile.model import ResultSet

KEYS: tuple[str, ...] = tuple(spec.name for spec in CEILINGS)
MEASURED, STORED, LENT = "measured", "stored with the run", "lent by the baseline"


@dataclass(frozen=True)
class Ceiling:
    value: float
    source: str  # MEASURED (median of ``runs``), STORED or LENT
    runs: int = 1
    datasheet: float | None = None

    def describe(self) -> str:
        return f"median of {self.runs} runs" if self.source == MEASURED and self.runs > 1 else self.source


@dataclass(frozen=True)
class Ceilings:
    """Ceiling key -> :class:`Ceiling`; only the keys known for the machine."""

    found: Mapping[str, Ceiling]

    @classmethod
    def of(cls, results: ResultSet, lender: Ceilings | None = None) -> Ceilings:
        sheet = results.info.datasheet
        over_runs: dict[str, list[float]] = {}
        for figures in results.runs().values():
            for key in KEYS:
                over_runs.setdefault(key, []).extend(figures.get(key, ()))
        found: dict[str, Ceiling] = {}
        lent = dict(results.info.lent_ceilings) | (lender.own() if lender else {})
        for key in KEYS:
            spec = sheet.ceiling(key) if sheet else None
            if over_runs.get(key):
                found[key] = Ceiling(
                    float(statistics.median(over_runs[key])), MEASURED, len(over_runs[key]), spec
                )
            elif key in results.info.ceilings:
                found[key] = Ceiling(results.info.ceilings[key], STORED, 1, spec)
            elif key in lent:
                found[key] = Ceiling(lent[key], LENT, 1, spec)
        return cls(found)

    def get(self, key: str) -> Ceiling | None:
        return self.found.get(key)

    def value(self, key: str) -> float | None:
        found = self.found.get(key)
        return None if found is None else found.value

    def values(self) -> dict[str, float]:
        """key -> value of every ceiling known for the machine (its own and those a baseline lent)."""
        return {k: c.value for k, c in self.found.items()}

    def own(self) -> dict[str, float]:
        """key -> value of the machine's own measurements (what a run stores, and what a baseline lends)."""
        return {k: c.value for k, c in self.found.items() if c.source != LENT}

    def lent(self) -> dict[str, float]:
        """key -> value of the ceilings a baseline lent (stored with the run, so it derives the same way
        later)."""
        return {k: c.value for k, c in self.found.items() if c.source == LENT}

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.found))

    def __len__(self) -> int:
        return len(self.found)
