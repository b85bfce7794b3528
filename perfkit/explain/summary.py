"""What one profiled call of a benchmark's work did on the device: a small, typed record that a result file or
a baseline can keep beside the timing, so that a regressed row can say which kernels moved.

Why a summary and not the trace: a Kineto trace of one training step is megabytes; the question a regression
asks ("which kernel got slower, did a kernel appear, did the copies or the launches change, did the time go to
the GPU or to the host") needs the top kernels by device time, the copies per direction, the launch count, the
host's wall time, the GPU's busy time and the SM clock it ran at. The top ``TOP_KERNELS`` are kept by name
and the rest folded into one ``OTHER`` entry, so totals still add up. Every figure is per call of the work:
a summary of three calls compares with one of a single call, and a kernel launched on every other call counts
0.5.

Busy time is the union of the device's activity intervals (kernels and copies), so kernels overlapping on two
streams count once. On a CPU-only run there are no kernels: there the "kernels" are the aten operators by self
CPU time and busy time is the union of the operators' intervals (``device == "cpu"``), so the summary and its
comparison (perfkit.explain.diff) work, and are tested, without a GPU.

Summaries are built from a plain list of :class:`Activity`, read off ``prof.profiler.kineto_results``, so a
test can feed synthetic GPU activities. :func:`profile` never raises for the profiler's sake: a profiler that
cannot start (CUPTI taken by another tool) or another profiler already running (which starting ours would
cancel) gives :class:`Unavailable` with one sentence, as a benchmark's verdict must not depend on its
explanation. torch is imported inside :func:`profile` alone, so a machine that only reads and compares
summaries needs no torch.
"""
from __future__ import annotations

import re
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from perfkit.errors import UsageError
from perfkit.resultfile.payloads import Record

#: Kernels kept by name; the rest are folded into ``OTHER`` (a regression's cause is among the heaviest few,
#: and a training step launches hundreds of distinct kernels).
TOP_KERNELS = 20
#: The entry that holds every kernel beyond the top ``TOP_KERNELS``.
OTHER = "(other kernels)"

#: Kineto's activity types (libkineto's ActivityType names, as ``_KinetoEvent.activity_type()`` gives them)
#: and what each is here.
KINDS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset", "cpu_op": "operator",
         "cuda_runtime": "runtime", "cuda_driver": "runtime"}
_BYTES = re.compile(r'"bytes"\s*:\s*(\d+)')
#: A CUDA runtime or driver call on the host (cudaLaunchKernel, cuLaunchKernelEx, cudaMemcpyAsync, ...).
_RUNTIME_CALL = re.compile(r"cu(da)?[A-Z]")


@dataclass(frozen=True)
class Activity:
    """One profiled event, as the summary reads it. ``kind``: kernel, memcpy, memset, launch (a CUDA runtime
    or driver call that launches work) or operator (an aten operator on the host); ``thread`` tells nested
    operators of one thread from those of another."""

    name: str
    kind: str
    start_ns: int
    end_ns: int
    nbytes: int = 0
    thread: int = 0

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class KernelStat(Record):
    """A kernel (an operator on CPU) per call: launches and device time (self CPU time for an operator)."""

    TAG: ClassVar[str] = "kernel"
    name: str
    count: float
    total_us: float

    @property
    def mean_us(self) -> float:
        return self.total_us / self.count if self.count else 0.0


@dataclass(frozen=True)
class CopyStat(Record):
    """The copies of one kind per call: ``HtoD``, ``DtoH``, ``DtoD``, ``PtoP``, ``HtoH`` or ``Memset``."""

    TAG: ClassVar[str] = "copy"
    kind: str
    count: float
    bytes: int
    total_us: float


@dataclass(frozen=True)
class KernelSummary(Record):
    """One profiled call of a benchmark's work (figures per call; ``calls``: how many were profiled)."""

    TAG: ClassVar[str] = "kernel_summary"
    device: str  # "cuda" or "cpu"
    calls: int
    host_s: float  # the host's wall time of a call, its final synchronisation included
    gpu_busy_s: float  # the union of device activity (of operators on CPU)
    launches: float  # CUDA runtime and driver calls that launch work
    kernels: tuple[KernelStat, ...]
    copies: tuple[CopyStat, ...] = ()
    #: the SM clock NVML read right after the profiled calls (MHz; None on a CPU or where it cannot be read):
    #: a kernel that got slower at a lower clock is the card's, not the code's
    sm_clock_mhz: float | None = None

    @property
    def kernel_us(self) -> float:
        """The kernels' device time per call, every kernel (``OTHER`` too) added up."""
        return sum(k.total_us for k in self.kernels)


@dataclass(frozen=True)
class Unavailable:
    """No summary, and why in one sentence: what a benchmark shows instead of its explanation."""

    reason: str


def summarise(activities: Iterable[Activity], *, calls: int, host_s: float, device: str,
              sm_clock_mhz: float | None = None) -> KernelSummary:
    """The summary of ``calls`` calls of the work that gave ``activities`` in ``host_s`` seconds of wall time
    in all, the SM clock at ``sm_clock_mhz``."""
    if calls < 1:
        raise UsageError(f"a summary needs at least one call, not {calls}")
    events = list(activities)
    if device == "cpu":
        timed = _self_times([a for a in events if a.kind == "operator"])
        busy = [a for a in events if a.kind == "operator"]
    else:
        timed = [(a.name, a.duration_ns) for a in events if a.kind == "kernel"]
        busy = [a for a in events if a.kind in ("kernel", "memcpy", "memset")]
    return KernelSummary(
        device=device, calls=calls, host_s=host_s / calls, gpu_busy_s=_union_ns(busy) / 1e9 / calls,
        launches=sum(a.kind == "launch" for a in events) / calls,
        kernels=_top_kernels(timed, calls), copies=_copies(events, calls), sm_clock_mhz=sm_clock_mhz)


def _self_times(operators: list[Activity]) -> list[tuple[str, int]]:
    """Each operator's self time: its span less its direct children's, children found by nesting within one
    thread (aten::matmul holds aten::mm, which holds the work)."""
    own = [a.duration_ns for a in operators]
    open_ones: dict[int, list[int]] = defaultdict(list)
    for at in sorted(range(len(operators)), key=lambda i: (operators[i].start_ns, -operators[i].end_ns)):
        op = operators[at]
        stack = open_ones[op.thread]
        while stack and operators[stack[-1]].end_ns <= op.start_ns:
            stack.pop()
        if stack:
            own[stack[-1]] -= op.duration_ns
        stack.append(at)
    return [(op.name, max(t, 0)) for op, t in zip(operators, own)]


def _union_ns(activities: list[Activity]) -> int:
    """The time covered by at least one of ``activities``: overlapping kernels of two streams count once."""
    covered = 0
    end = None
    for a in sorted(activities, key=lambda a: a.start_ns):
        if end is None or a.start_ns > end:
            covered += a.duration_ns
            end = a.end_ns
        elif a.end_ns > end:
            covered += a.end_ns - end
            end = a.end_ns
    return covered


def _top_kernels(timed: list[tuple[str, int]], calls: int) -> tuple[KernelStat, ...]:
    """The ``TOP_KERNELS`` heaviest names per call, heaviest first, the rest as one ``OTHER``."""
    counts: dict[str, int] = defaultdict(int)
    totals: dict[str, int] = defaultdict(int)
    for name, ns in timed:
        counts[name] += 1
        totals[name] += ns
    stats = [KernelStat(n, counts[n] / calls, totals[n] / 1e3 / calls) for n in counts]
    return _capped(stats)


def _capped(stats: list[KernelStat]) -> tuple[KernelStat, ...]:
    """``stats`` heaviest first, those beyond ``TOP_KERNELS`` (and any ``OTHER`` among them) folded into one
    ``OTHER``."""
    ranked = sorted((s for s in stats if s.name != OTHER), key=lambda s: (-s.total_us, s.name))
    rest = ranked[TOP_KERNELS:] + [s for s in stats if s.name == OTHER]
    if not rest:
        return tuple(ranked)
    other = KernelStat(OTHER, sum(s.count for s in rest), sum(s.total_us for s in rest))
    return (*ranked[:TOP_KERNELS], other)


def _copies(events: list[Activity], calls: int) -> tuple[CopyStat, ...]:
    """Memcpy and memset activity per kind, per call, in order of kind."""
    count: dict[str, int] = defaultdict(int)
    nbytes: dict[str, int] = defaultdict(int)
    ns: dict[str, int] = defaultdict(int)
    for a in events:
        if a.kind in ("memcpy", "memset"):
            kind = copy_kind(a.name) if a.kind == "memcpy" else "Memset"
            count[kind] += 1
            nbytes[kind] += a.nbytes
            ns[kind] += a.duration_ns
    return tuple(CopyStat(k, count[k] / calls, round(nbytes[k] / calls), ns[k] / 1e3 / calls)
                 for k in sorted(count))


def copy_kind(name: str) -> str:
    """A memcpy's direction from its Kineto name: "Memcpy HtoD (Pageable -> Device)" is HtoD."""
    words = name.split()
    return words[1] if len(words) > 1 and words[0] == "Memcpy" else name


def median_of(summaries: Sequence[KernelSummary]) -> KernelSummary:
    """The median of several runs' summaries, as a baseline keeps it: per kernel name and per copy kind the
    median count and time over the runs (0 in a run that lacks it, so a kernel seen in fewer than half the
    runs drops out), and the median launches, host time and busy time. ``calls``: all the runs' calls."""
    if not summaries:
        raise UsageError("the median of no summaries")
    if len({s.device for s in summaries}) > 1:
        raise UsageError("summaries of different devices have no median")
    kernels = [_median_kernel(name, summaries) for name in _names(s.kernels for s in summaries)]
    copies = [_median_copy(kind, summaries) for kind in sorted({c.kind for s in summaries for c in s.copies})]
    return KernelSummary(
        device=summaries[0].device, calls=sum(s.calls for s in summaries),
        host_s=statistics.median(s.host_s for s in summaries),
        gpu_busy_s=statistics.median(s.gpu_busy_s for s in summaries),
        launches=statistics.median(s.launches for s in summaries),
        kernels=_capped([k for k in kernels if k.count or k.total_us]),
        copies=tuple(c for c in copies if c.count or c.total_us),
        sm_clock_mhz=statistics.median(clocks) if (clocks := [s.sm_clock_mhz for s in summaries
                                                               if s.sm_clock_mhz is not None]) else None)


def _names(kernel_lists: Iterable[tuple[KernelStat, ...]]) -> list[str]:
    return sorted({k.name for kernels in kernel_lists for k in kernels})


def _median_kernel(name: str, summaries: Sequence[KernelSummary]) -> KernelStat:
    found = [next((k for k in s.kernels if k.name == name), KernelStat(name, 0, 0.0)) for s in summaries]
    return KernelStat(name, statistics.median(k.count for k in found),
                      statistics.median(k.total_us for k in found))


def _median_copy(kind: str, summaries: Sequence[KernelSummary]) -> CopyStat:
    found = [next((c for c in s.copies if c.kind == kind), CopyStat(kind, 0, 0, 0.0)) for s in summaries]
    return CopyStat(kind, statistics.median(c.count for c in found),
                    round(statistics.median(c.bytes for c in found)),
                    statistics.median(c.total_us for c in found))


def profile(fn: Callable[[], object], calls: int = 1, *, device: str) -> KernelSummary | Unavailable:
    """``fn`` called ``calls`` times under the PyTorch profiler (the caller has warmed it up), summarised;
    :class:`Unavailable` where the profiler cannot run. An error of ``fn`` itself propagates: that is the
    benchmark's failure, not the profiler's."""
    import torch

    if calls < 1:
        raise UsageError(f"profile at least one call, not {calls}")
    cuda = device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        return Unavailable("no CUDA device here, so the work's kernels cannot be profiled.")
    if torch.autograd._profiler_enabled():  # starting ours would cancel that one's trace (torch 2.14 does)
        return Unavailable("another profiler is running, and profiling now would cancel its trace.")
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    sync = torch.cuda.synchronize if cuda else _nothing
    try:
        sync()
        profiler = torch.profiler.profile(activities=activities)
        profiler.start()
    except Exception as error:  # noqa: BLE001 - whatever keeps the profiler from starting, the work goes on
        return Unavailable(f"the profiler could not start: {_first_line(error)}.")
    try:
        host_s = _timed(fn, calls, sync)
    finally:
        stopped = _stopped(profiler)
    if isinstance(stopped, Unavailable):
        return stopped
    return _checked(summarise(stopped, calls=calls, host_s=host_s, device="cuda" if cuda else "cpu",
                              sm_clock_mhz=_sm_clock_mhz() if cuda else None))


def _sm_clock_mhz() -> float | None:
    """The current GPU's SM clock as NVML reads it, or None where it cannot (no NVML, a driver that says
    nothing): the summary goes on without it."""
    import torch

    try:
        return float(torch.cuda.clock_rate())
    except Exception:  # noqa: BLE001 - pynvml missing or failing: a summary without its clock
        return None


def _nothing() -> None:
    """No device to wait for."""


def _timed(fn: Callable[[], object], calls: int, sync: Callable[[], None]) -> float:
    """The host's wall time of ``calls`` calls of ``fn``, the device waited for at the end."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return time.perf_counter() - start


def _stopped(profiler: Any) -> list[Activity] | Unavailable:
    """The profiler stopped and its events read, or why that failed."""
    try:
        profiler.stop()
        results = profiler.profiler.kineto_results
        events = results.events() if results is not None else None
    except Exception as error:  # noqa: BLE001 - as at the start: the work goes on without its summary
        return Unavailable(f"the profiler failed to stop: {_first_line(error)}.")
    if events is None:
        return Unavailable("the profiler recorded nothing.")
    return [a for a in map(activity, events) if a is not None]


def activity(event: Any) -> Activity | None:
    """A Kineto event (``_KinetoEvent``) as an :class:`Activity`; None for what the summary does not read."""
    name = event.name()
    if hasattr(event, "activity_type"):
        kind = KINDS.get(event.activity_type())
    else:
        kind = _kind_by_device(event, name)
    if kind == "runtime":
        kind = "launch" if "Launch" in name else None
    if kind is None:
        return None
    nbytes = _nbytes(event) if kind in ("memcpy", "memset") else 0
    return Activity(name, kind, event.start_ns(), event.end_ns(), nbytes, event.start_thread_id())


def _kind_by_device(event: Any, name: str) -> str | None:
    """What the event is where torch names no activity type (before 2.14; the lent GPU image's 2.11): on the
    device a copy, a set or a kernel by its name, on the host a CUDA runtime or driver call by its name or an
    operator; annotations (a ``record_function`` shows on both timelines) are neither."""
    if getattr(event, "is_user_annotation", lambda: False)() or getattr(event, "is_python_function",
                                                                         lambda: False)():
        return None
    if not str(event.device_type()).endswith("CPU"):
        return "memcpy" if name.startswith("Memcpy") else "memset" if name.startswith("Memset") else "kernel"
    return "runtime" if _RUNTIME_CALL.match(name) else "operator"


def _nbytes(event: Any) -> int:
    """A copy's bytes: ``nbytes()`` where torch fills it in, else the "bytes" Kineto records in a copy's
    metadata (``extra_meta()``, or its JSON where this torch has no ``extra_meta``)."""
    nbytes = int(event.nbytes()) if hasattr(event, "nbytes") else 0
    if nbytes > 0:
        return nbytes
    meta = event.extra_meta() if hasattr(event, "extra_meta") else None
    if meta and meta.get("bytes") is not None:
        return int(meta["bytes"])
    found = _BYTES.search((event.metadata_json() or "") if hasattr(event, "metadata_json") else "")
    return int(found[1]) if found else 0


def _checked(summary: KernelSummary) -> KernelSummary | Unavailable:
    """``summary``, unless it launched work on the GPU but recorded none of it: CUPTI was taken by another
    tool (Nsight, another profiler), and the empty summary would read as every kernel gone."""
    if summary.device == "cuda" and summary.launches and not summary.kernels and not summary.copies:
        return Unavailable("the profiler saw launches but no kernel: another tool holds CUPTI.")
    return summary


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0].rstrip(".") if text else type(error).__name__
