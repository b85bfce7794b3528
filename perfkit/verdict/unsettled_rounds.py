"""A measurement that did not settle: rounds that spread far more within the run than the baseline's did.

A benchmark's rounds inside one healthy run agree closely (a warm managed-memory launch on an H100 or H200:
1-6% IQR over median). On two fresh H100 hosts a warm launch's rounds instead spread 39% and 48% (1.64 ms
falling to 0.95 ms over ten rounds; 2.2-2.4 ms then 1.1-1.2 ms), and one nightly run read +65% and +281%.
One such run says the measurement was disturbed rather than that the code is slower, as nvbench discards
samples taken while the clock was throttled: a figure that got worse in a single run while its rounds spread
this much more than the baseline's is ``unknown``. Only in a single run: ``--perfkit-confirm`` judges its
re-runs without this excuse, so a slowdown that persists over fresh processes (a code change that makes
pages move, say) is ``regressed`` there. A figure whose rounds spread widely in the baseline too (host-bound
first touches, launch-paced steps: 20-42%) is never excused by it: its noise model already holds that.

A figure whose rounds agree to a fraction of a percent is unsettled at a smaller spread: on a fresh H200
(2026-11-28) the 1-GPU DDP ResNet-50 step's first twenty of thirty rounds ran 33.2-40.9 ms and the last ten
33.12-33.17 ms, the baseline's eight runs 33.0-33.2 ms: its rounds spread 7.2% against 0.05% (144 times), the
run read +3.1% and ``regressed``, and three fresh re-runs read it unchanged. Over five fresh runs of three
machines that day no other figure spread twenty times its baseline's. Such a disturbance leaves some rounds
at the baseline's pace (there the last ten; on another H200 on 2026-12-03 the step's rounds ran 33.0-46.1 ms,
the fastest at the baseline's 33.0): where no round came within the rounds' spread of the median of the
baseline's newest run, the whole run moved and the verdict does not excuse it (CI, 2026-12-04: a 2 ms sleep
made twice as slow, its rounds spread 5% on a busy 2-core host against 0.2%, read ``unknown`` and the run
passed). The wider rule keeps its excuse whatever the change: the H100's disturbed launches above drifted as
a whole run.

The same spreads keep such a run out of a baseline it is appended to, whichever way it moved and however
near the baseline's pace its rounds came (perfkit.store.baselines.without_unsettled): appended, rounds that
spread twenty times the baseline's widen every later verdict's noise.
"""
from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from perfkit.resultfile.model import BenchmarkEntry
from perfkit.verdict.noise import round_samples, round_spread

#: Rounds that spread less than this (IQR over median) within a run are settled, whatever the baseline's did.
MIN_SPREAD = 0.20
#: How many times the baseline's within-run spread counts as not settled.
FACTOR = 5.0
#: A baseline whose rounds spread more than this did not settle either: the rule does not apply.
SETTLED_BASELINE = 0.10
#: Rounds this many times as spread as the baseline's did not settle, at TIGHT_MIN_SPREAD or more.
TIGHT_FACTOR = 20.0
#: The smallest spread the TIGHT_FACTOR rule reads: below it a GPU-bound figure's rounds are settled.
TIGHT_MIN_SPREAD = 0.05


@dataclass(frozen=True)
class Unsettled:
    """A figure whose rounds in the current run spread ``spread`` (IQR over median) where the baseline's
    newest run's spread ``baseline_spread``: a disturbance of that run (payloads.Disturbance)."""

    figure: str
    spread: float
    baseline_spread: float

    @property
    def disturbed(self) -> bool:
        return True

    def kept_out(self) -> str:
        """Why a run to be appended to a baseline leaves this benchmark out, whichever way it moved."""
        return (f"its {self.figure} rounds spread {self.spread:.0%} within this run "
                f"({self.baseline_spread:.1%} in the baseline's)")

    def sentence(self) -> str:
        return (f"its {self.figure} rounds spread {self.spread:.0%} within this run "
                f"({self.baseline_spread:.1%} in the baseline's): a measurement that did not settle, not a "
                "steady slowdown; --perfkit-confirm's fresh runs decide")


def unsettled(base: BenchmarkEntry, cur: BenchmarkEntry, figure: str, current_runs: int,
              judging: bool = True) -> Unsettled | None:
    """``figure`` of a single current run ``cur`` whose rounds did not settle against ``base``'s (see the
    module docstring); None where they did, where either side has fewer than four rounds, or where the current
    side holds several runs. ``judging``: for a verdict's excuse, where the tight rule also asks for a round
    near the baseline's pace; else for a run to be appended, kept out on the spreads alone."""
    if current_runs != 1:
        return None
    now, then = round_spread(cur, figure), round_spread(base, figure)
    if now is None or then is None or then > SETTLED_BASELINE:
        return None
    loose = now >= MIN_SPREAD and now >= FACTOR * then
    tight = (now >= TIGHT_MIN_SPREAD and now >= TIGHT_FACTOR * then
             and (not judging or _gap_to_baseline_pace(base, cur, figure) <= now))
    return Unsettled(figure, now, then) if loose or tight else None


def _gap_to_baseline_pace(base: BenchmarkEntry, cur: BenchmarkEntry, figure: str) -> float:
    """The smallest distance of a round of ``figure`` in ``cur`` from the median of ``base``'s rounds, as a
    fraction of that median: 0 where one round ran at the baseline's pace."""
    pace = statistics.median(round_samples(base, figure))
    return min(abs(value / pace - 1) for value in round_samples(cur, figure))


def unsettled_gate(base: BenchmarkEntry, cur: BenchmarkEntry,
                   current: Mapping[str, Sequence[float]]) -> Unsettled | None:
    """The first gating figure (either side's gates, as the judge reads them) whose rounds in ``cur`` did not
    settle against ``base``'s, on the spreads alone (the rule for a run to be appended); ``current``: each
    figure's values over the runs ``cur`` stands for."""
    for figure in sorted(base.gating_figures() | cur.gating_figures()):
        found = unsettled(base, cur, figure, len(current.get(figure, ())), judging=False)
        if found is not None:
            return found
    return None
