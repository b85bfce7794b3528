"""Whether a baseline's runs all came from one sitting of the very machine a later run is judged on.

Runs of several machines, or of one machine on several days, carry the drift between sittings in their
spread; runs taken back to back (a ``--perfkit-save-baseline=local``: the run and two re-runs) do not, and
the judge then has no between-machine term either, for it is the same machine. On a 2-core VM a later sitting
ran 15-25% faster than such a baseline, every figure together, and 6 of 9 runs flagged something
(docs/findings.md, 2026-12-06); a CPU run gets no common host shift to excuse it (HostShift). The verdicts
are kept as judged, and the caution is said beside them with how to measure that drift: runs of other
sittings appended to the baseline widen its spread by what a sitting moves.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from perfkit.resultfile.model import ResultSet

#: Baseline runs within this of each other are one sitting: back to back, they share the machine's state.
SITTING = timedelta(hours=1)


def one_sitting(baseline: ResultSet, current: ResultSet) -> str:
    """The caution for ``current`` judged against a ``baseline`` whose runs all ran in one sitting (within
    :data:`SITTING`) of the machine ``current`` ran on, before it: the drift above came within minutes; ""
    otherwise (runs of several machines or sittings, another machine, runs among the baseline's as an A/B's
    sides are, unknown dates or machines)."""
    machines = _machines(baseline)
    dates, now = _dates(baseline), _dates(current)
    if len(machines) != 1 or machines != _machines(current) or "" in machines or not dates or not now:
        return ""
    first, last = min(dates), max(dates)
    if last - first > SITTING or min(now) <= last:  # several sittings, or runs among the baseline's (an A/B)
        return ""
    return (f"the baseline's runs were all taken back to back in one sitting of this machine "
            f"({first:%Y-%m-%d %H:%M}-{last:%H:%M} UTC), so their spread leaves out how far a later run "
            "drifts with the machine's state, every figure together; append this machine's runs of two other "
            "sittings, an hour or more apart (`perfkit baseline save --append RESULTS.json`, with --local "
            "for this machine's own), to measure it")


def _machines(results: ResultSet) -> set[str]:
    return {origin.machine for runs in results.origins().values() for origin in runs}


def _dates(results: ResultSet) -> list[datetime]:
    """Every run's date in UTC (a date without a zone read as UTC); none where one does not parse (a date
    unknown is no sitting to place)."""
    try:
        parsed = [datetime.fromisoformat(date) for date in results.dates()]
    except ValueError:
        return []
    return [(d if d.tzinfo else d.replace(tzinfo=timezone.utc)).astimezone(timezone.utc) for d in parsed]
