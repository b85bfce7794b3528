"""Which benchmarks are judged against baseline runs of too few sittings of the very machine a run is on.

Runs of several machines, or of one machine on several days, carry the drift between sittings in their
spread; runs taken within the hour (a ``--perfkit-save-baseline=local``: the run and two re-runs, back to
back) do not, and the judge then adds no between-machine term either, for it is the same machine. On one
2-core VM a run a few minutes after such a baseline read every figure 15-25% faster and 6 of 9 runs flagged
something (docs/findings.md, 2026-12-06); a CPU run gets no common host shift to excuse it (HostShift). The
verdicts stay as judged; the caution is said beside them, with how to measure that drift: runs of other
sittings appended to the baseline, whose spread then holds what a sitting moves.
"""
from __future__ import annotations

import itertools
from datetime import datetime, timedelta

from perfkit.resultfile.metrics import moment
from perfkit.resultfile.model import ResultSet, RunOrigin

#: Runs of one machine further apart than this are of different sittings.
SITTING_GAP = timedelta(hours=1)
#: The sittings a benchmark's baseline runs on this machine should come from before no caution is said: the
#: one that saved it and two more.
ENOUGH_SITTINGS = 3


def few_sittings(baseline: ResultSet, current: ResultSet) -> str:
    """The caution for the benchmarks of ``current`` whose baseline runs all ran on the machine ``current``
    ran on, in fewer than :data:`ENOUGH_SITTINGS` sittings, every one before ``current``'s runs; "" where
    there are none (runs of other machines or of enough sittings, runs among the baseline's as an A/B's
    sides are, a run's date or machine unknown)."""
    now = current.origins()
    here = {o.machine for runs in now.values() for o in runs}
    started = _dates(tuple(o for runs in now.values() for o in runs))
    if len(here) != 1 or "" in here or not started:
        return ""
    counts = [count for name, runs in baseline.origins().items() if name in now
              and (count := _sittings(runs, here, min(started))) is not None and count < ENOUGH_SITTINGS]
    if not counts:
        return ""
    which = "one sitting" if max(counts) == 1 else f"fewer than {ENOUGH_SITTINGS} sittings"
    return (f"{len(counts)} of {len(now)} benchmarks are judged against baseline runs of {which} of this "
            "machine (runs less than an hour apart), whose spread leaves out how far the machine moves "
            "between sittings (one 2-core VM ran 15-25% faster minutes after its baseline): a regressed or "
            "improved there may be that drift; append runs of other sittings, an hour or more apart, until "
            f"it holds {ENOUGH_SITTINGS} (`perfkit baseline save --append RESULTS.json`, with --local for "
            "this machine's own)")


def _sittings(runs: tuple[RunOrigin, ...], machines: set[str], before: datetime) -> int | None:
    """How many sittings ``runs`` came from, where all ran on ``machines`` (the current run's one) at known
    dates before ``before``; None otherwise (nothing to say of them)."""
    dates = _dates(runs)
    if not dates or {o.machine for o in runs} != machines or max(dates) >= before:
        return None
    return 1 + sum(later - earlier > SITTING_GAP for earlier, later in itertools.pairwise(dates))


def _dates(runs: tuple[RunOrigin, ...]) -> list[datetime]:
    """The runs' dates, oldest first; none where one is unknown (no sitting to place it in)."""
    dates = [moment(o.date) for o in runs]
    return sorted(d for d in dates if d is not None) if None not in dates else []
