"""GPU kernels written in numba.cuda (importing numba.cuda needs numba-cuda: the ``cuda`` extra), and the
sizes of their work, which need no numba: ``out = x + y`` on float32 reads two and writes one element."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from perfkit.errors import UsageError
from perfkit.resultfile.figures import OVER_ONE_SM_COPY
from perfkit.resultfile.metrics import BETWEEN_HOSTS_KEY, GATE_KEY
from perfkit.resultfile.payloads import VectorAdd

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


#: Why a figure of the vector add cannot reach a one-run MDE of 10% against a baseline of other hosts of its
#: model, however many runs its baseline holds (MetricRecorder.noise_between_hosts; docs/findings.md,
#: 2026-12-06): each host repeats it closely, the hosts do not agree. On the committed H100 baseline (eleven
#: hosts of one Xeon model):
#: the CPU references over the host's own copy of the same bytes (at 1 M elements 1.48-1.58 between hosts,
#: 1.48-1.51 over eight runs of one);
HOST_COPY_BETWEEN_HOSTS = ("a host's add over its own copy of the same bytes differs between hosts of one "
                           "model, each repeating it closely (docs/findings.md, 2026-12-06)")
#: a first launch on managed memory over its own pages' copy, the driver's page work (the 1 M tuned kernel
#: 0.93-1.06 between nine hosts, 0.93-0.97 over eight runs of one);
PAGE_WORK_BETWEEN_HOSTS = ("the driver's page work on a first launch differs between hosts of one model, "
                           "each repeating it closely (docs/findings.md, 2026-12-06)")
#: one thread's first launch, its pace over 1 M elements (56.3-58.1 ms between twelve hosts, 55.8-56.3 over
#: eight runs of one);
ONE_THREAD_BETWEEN_HOSTS = ("one thread's pace on a first launch differs between hosts of one model, each "
                            "repeating it closely (docs/findings.md, 2026-12-06)")
#: an 8 us kernel timed alone, which the launching host paces (the 1 M grid's 9.50-9.95 us between nine
#: hosts, 9.50-9.66 over eight runs of one).
SHORT_KERNEL_BETWEEN_HOSTS = ("an 8 us kernel timed alone moves with the host that launches it, more between "
                              "hosts of one model than between runs on one (docs/findings.md, 2026-12-06)")
#: one block's resident launch timed alone, at the weekly's middle sizes, where no copy on its multiprocessor
#: is timed beside it: the chip picks the multiprocessor, whose distance from memory sets the pace (the warm
#: K = 100 M launch 0.156-0.157 s on some H200s and 0.161-0.164 s on others, each machine within 0.06%).
ONE_BLOCK_BETWEEN_HOSTS = ("one block's pace is that of the multiprocessor the GPU runs it on, which "
                           "differs between GPUs of one model, each repeating it closely (docs/findings.md, "
                           "2026-12-03)")


def between_hosts_reason(mode: str, scenario: str, fits_l2: bool, over_its_copy: bool = False) -> str | None:
    """Why a vector add's gating figure (``mode``: "cpu", "explicit", "managed_first" or "managed_warm";
    ``fits_l2``: its arrays fit in the GPU's L2, where the grid and tuned kernels are timed alone;
    ``over_its_copy``: one block's resident launch gated over a copy on its multiprocessor) differs between
    hosts (machines) more than its runs on one do; None where its noise is its own run to run."""
    if mode == "cpu":
        return HOST_COPY_BETWEEN_HOSTS
    if mode == "managed_first":
        return ONE_THREAD_BETWEEN_HOSTS if scenario == "one_thread" else PAGE_WORK_BETWEEN_HOSTS
    if scenario == "one_block":
        return None if over_its_copy else ONE_BLOCK_BETWEEN_HOSTS
    return SHORT_KERNEL_BETWEEN_HOSTS if fits_l2 and scenario in ("grid", "tuned") else None


def between_hosts_now(extra_info: Mapping[str, Any]) -> str | None:
    """Why today's code declares a stored entry's noise to lie between hosts (its ``extra_info``), whatever
    the code that saved it declared: a baseline's entries keep the declaration of the day they ran, and a
    simulation or a held-out night of them judges today's rule. A vector add's from its case and the figure
    it gates on (1 M elements stand for arrays that fit a GPU's L2: 12 MB fit that of every GPU the
    committed baselines hold, 5 M's 60 MB none); any other benchmark's as it was stored."""
    case = extra_info.get(VectorAdd.TAG)
    if not case:
        return extra_info.get(BETWEEN_HOSTS_KEY)
    over_its_copy = extra_info.get(GATE_KEY) == OVER_ONE_SM_COPY.name
    return between_hosts_reason(case["mode"], case["scenario"], case["k"] == 1, over_its_copy)


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
