"""GPU kernels written in numba.cuda (importing numba.cuda needs numba-cuda: the ``cuda`` extra), and the
sizes of their work, which need no numba: ``out = x + y`` on float32 reads two and writes one element."""
from __future__ import annotations

import math
from typing import Any

from perfkit.errors import UsageError

#: Bytes a vector add moves per element: x and y read, out written, four bytes each.
BYTES_PER_ELEMENT = 12
#: The smallest change worth a verdict for a first launch on managed memory, where the driver's page work is
#: part of the time: a first touch spread 6-12% over eight H200 runs on three machines, and the K1 grid 15-19%
#: between four fresh H100 processes (fifty rounds a process instead of ten did not narrow it).
MANAGED_TOLERANCE = 0.15
#: The same for a warm launch's kernel alone (the stream held until it is queued), GPU work on resident pages:
#: between four fresh H100 processes the K1 grid and tuned kernels repeated within 0.7-1.2% and the K100 grid
#: within 0.1%; a GPU-bound kernel's 3% would leave a 1%-noise figure's one-run MDE above it.
MANAGED_WARM_TOLERANCE = 0.05
#: One thread's first launch on managed memory is the thread's pace, not the page work (57 ms at K = 1 M on an
#: H200, of it a first touch of about 1.5 ms): it moved 1.2% over 36 H200 runs of 2026-11-27 to 12-03, and at
#: MANAGED_TOLERANCE its one-run MDE read 16%. It declares its kind's 5% (declaring none, a run would take the
#: 15% its baseline's entries declare); so does a first launch judged over a copy of its own pages timed
#: beside each round where that ratio repeats within about 2.5% between fresh processes: one block's over one
#: multiprocessor's copy (1.3-1.4% on one H200, at 1 M and 100 M elements, where its time moved 3.1% and 0.6%,
#: and 8% and 5% between the baseline's machines), and the grid and tuned kernels' over a grid's touch: at
#: 1 M over forty rounds a placement (ten left 2.2-2.6% on one H200), at 100 M over twelve, the pages sent
#: back by prefetch (0.6% and 0.9% between five fresh processes of one H200, where three rounds after the
#: host's write had left 5.9% there and 3.4-3.9% between the baseline's machines).
PACED_FIRST_TOLERANCE = 0.05


def managed_minimum_effect(mode: str, scenario: str, over_its_copy: bool = False) -> float | None:
    """The minimum effect a vector add on managed memory declares (``mode``: "managed_first" or
    "managed_warm"; ``over_its_copy``: a first launch judged over a copy of its pages timed beside each round
    that repeats within about 2.5% between fresh processes); None for the other modes."""
    if mode == "managed_first":
        return PACED_FIRST_TOLERANCE if scenario == "one_thread" or over_its_copy else MANAGED_TOLERANCE
    return MANAGED_WARM_TOLERANCE if mode == "managed_warm" else None


def elements(k_millions: Any) -> int:
    """K million as an element count; K must be a positive number."""
    try:
        k = float(k_millions)
    except (TypeError, ValueError):
        raise UsageError(f"K must be a number of millions of elements, not {k_millions!r}") from None
    if not math.isfinite(k) or k <= 0:
        raise UsageError(f"K must be a positive number of millions of elements, not {k_millions!r}")
    n = round(k * 1_000_000)
    if n < 1:
        raise UsageError(f"K={k_millions} million is less than one element")
    return n
