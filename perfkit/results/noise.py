"""Where a comparison's between-run spread comes from when neither side holds several runs.

A single nightly run against a single-run file has no spread of its own; the baseline of that hardware
kept the spread of the runs it was built from (perfkit.results.runs), and stands in.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from perfkit.results.baselines import BaselineStore
from perfkit.results.model import ResultSet, Spread


@dataclass(frozen=True)
class Noise:
    """Benchmark -> figure -> the spread a stored baseline measured for it."""

    spreads: Mapping[str, Mapping[str, Spread]] = field(default_factory=dict)
    source: str = ""

    @classmethod
    def of(cls, baseline: ResultSet, store: BaselineStore | None = None) -> Noise:
        """The baseline's own stored spread; where it holds none (a single run), that of the store's baseline
        of
        the same hardware and profile, when there is one."""
        if baseline.info.noise or store is None:
            return cls(baseline.info.noise, baseline.source)
        stored = store.load(baseline.hardware_id, baseline.profile)
        return cls(stored.info.noise, stored.source) if stored is not None else cls({}, "")

    def of_figure(self, benchmark: str, figure: str) -> Spread | None:
        return self.spreads.get(benchmark, {}).get(figure)
