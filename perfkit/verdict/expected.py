"""The per-layer roofline model of a benchmark's time on a device, and the device's roofs it reads.

A benchmark's work is a list of steps (perfkit.workloads.benchwork counts them: each layer's forward, its
backward where it trains, an optimizer's update, a kernel). A step takes ``max(flops / the matmul ceiling
of the precision it computes in, bytes / its copy ceiling)`` plus its kernel launches times the cost of one
launch measured on the device; the benchmark's time is the sum. A step's copy ceiling is the device's; for a
launch of one thread or one block, the copy by one multiprocessor of its size; for the pages a first launch
on managed memory migrates, a first touch of its size. Nothing is fitted per model: the same measured
ceilings serve every benchmark, so a model's time is a lower bound that the ratio of two devices' times turns
into an expected speedup. Each estimate says how much of it is compute, memory, launch and migration.

The roofs come from what a result set holds: its ceilings (perfkit.resultfile.ceilings; the datasheet for a
key never measured, where a datasheet lists it: none lists one multiprocessor's pace or a first touch's) and
the launch cost its one-element kernel measured (the timer-fidelity benchmark that replays it as a CUDA graph:
``events_batched_s`` for kernels launched one after another from Python, ``graph_replay_s`` for a graph's
replay, ``events_l2_flushed_s`` for a kernel timed alone, as a ``kernel_s`` figure is: events around one
launch after an L2 flush, the host's dispatch outside them). A device never measured takes its datasheet
and, said beside the figures, the launch cost of the device a prediction starts from; so does a run that
measured no launch cost of its own (a multi-GPU baseline runs no one-element kernel), from a one-GPU run of
its GPU (:meth:`Roofs.with_launch_of`).

A multi-GPU step adds its links: an all-reduce step moves its bytes at the bus bandwidth of the GPU count's
all-reduce (the largest message of test_allreduce_busbw, else half the NVLink figure of the datasheet), all
of it added to the time (an overlapped variant, where the backward hides all but what outlasts it, is kept
for comparison: perfkit.workloads.benchwork.ddp_work).
"""
from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from perfkit.resultfile import datasheet
from perfkit.resultfile.ceilings import KEYS, Ceilings
from perfkit.resultfile.figures import (
    BUSBW,
    FIRST_TOUCH_CEILINGS,
    GRAPH_REPLAY_S,
    KERNEL_ALONE,
    KERNEL_S,
    MANAGED_KERNEL_ALONE,
    ONE_SM_CEILINGS,
    SHORT_KERNEL_HUNDRED_ALONE,
    TIME,
    method_of,
    timer_seconds,
)
from perfkit.resultfile.metrics import WORK_KEY
from perfkit.resultfile.model import BenchmarkEntry, ResultSet
from perfkit.resultfile.payloads import AllreduceSweep

#: How a benchmark launches its kernels: one after another from Python, or replayed from a CUDA graph; and
#: how a launch shows in a figure that times a kernel alone (``kernel_s``: events around one launch, after an
#: L2 flush or with the stream held until it is queued), which holds the device's own floor of a kernel and
#: none of the host's dispatch.
EAGER, GRAPH, ALONE = "eager", "graph", "alone"
#: The methods that time a kernel alone: events around one launch, the host's dispatch outside them.
TIMED_ALONE = (KERNEL_ALONE, MANAGED_KERNEL_ALONE, SHORT_KERNEL_HUNDRED_ALONE)
#: The figure of the one-element kernel that gives each launch mode's cost.
LAUNCH_FIGURES: dict[str, str] = {EAGER: timer_seconds("events_batched").name, GRAPH: GRAPH_REPLAY_S.name,
                                  ALONE: timer_seconds("events_l2_flushed").name}
#: A step that moves managed pages from the host (a first launch on managed memory): a share of its own.
MIGRATE = "migrate"
#: Steps that move gradients between GPUs at an all-reduce's bus bandwidth: one that nothing hides, and one
#: that may run under the backward (DDP's buckets before the last): only what outlasts the backward counts.
ALLREDUCE, ALLREDUCE_HIDDEN = "all-reduce", "all-reduce under the backward"
#: A layer's backward step: the pass an all-reduce's buckets may run under.
BACKWARD = "backward"
#: The version of the model's count: raise it whenever the model counts a benchmark it did not count before,
#: or counts one differently; a work recorded by an older count (a file without one: 1) is counted again.
#: 2: a data-parallel step on several GPUs (its gradients' all-reduce).
WORK_VERSION = 2
#: The precision of arithmetic that is not a matrix product (elementwise, pooling, batch-norm): CUDA cores.
ARITHMETIC = "fp32"


class NoRoof(Exception):
    """A device lacks a figure the model needs (a precision it cannot compute in, a launch cost never
    measured)."""


@dataclass(frozen=True)
class Step:
    """One piece of a benchmark's work: a layer's forward or backward, an update, a kernel; a recorded one
    may stand for several alike (:func:`merged_steps`)."""

    name: str
    kind: str  # forward, backward, update, kernel, or MIGRATE
    flops: float
    bytes: float
    launches: int
    precision: str  # the precision its FLOPs are computed in (a matmul ceiling's key suffix)
    # the ceiling its bytes move at: the device's copy, one multiprocessor's, or a first touch's migration
    roof: str = datasheet.COPY


@dataclass(frozen=True)
class Work:
    """What a benchmark runs, as the model reads it: its steps, how it launches them, and the figure its
    speedup is read from (a time in seconds; or images/s over steps of ``images`` images).
    ``network``: a network's layers, which the model counts even where the benchmark names the one ceiling
    its time follows (a kernel keeps that ceiling's ratio)."""

    label: str
    steps: tuple[Step, ...]
    launch: str
    figure: str
    images: int | None = None
    network: bool = False

    def seconds(self, value: float) -> float:
        """A measured value of :attr:`figure` as the seconds of one unit of this work."""
        return self.images / value if self.images is not None else value

    def to_json(self) -> dict[str, Any]:
        """As a result file keeps it (``extra_info.work``): each step a list in :class:`Step`'s order, the
        steps alike but for their names kept as one (:func:`merged_steps`)."""
        return {"label": self.label, "launch": self.launch, "figure": self.figure, "images": self.images,
                "network": self.network,
                "steps": [list(dataclasses.astuple(step)) for step in merged_steps(self.steps)],
                "version": WORK_VERSION}

    @classmethod
    def from_json(cls, raw: Any) -> Work:
        """A work a result file kept; a ValueError where it is not one (the caller counts it again)."""
        try:
            steps = tuple(Step(str(n), str(k), float(f), float(b), int(launches), str(p), str(r))
                          for n, k, f, b, launches, p, r in raw["steps"])
            images = raw["images"]
            return cls(str(raw["label"]), steps, str(raw["launch"]), str(raw["figure"]),
                       None if images is None else int(images), bool(raw["network"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a recorded work: {exc}") from None


def merged_steps(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """``steps`` with those alike but for their names summed into one, in order of first appearance, named
    by the first and the multiple it stands for ("0.0 x1416"; merged again, a multiple of a multiple).
    :func:`estimate` counts them the same (a step's time is linear in its FLOPs, bytes and launches
    together), and a whole-card layer stack of 1416 alike layers is recorded as a few steps instead of
    446 KB a result."""
    alike: dict[tuple[str, float, float, int, str, str], list[Step]] = {}
    for step in steps:
        alike.setdefault((step.kind, step.flops, step.bytes, step.launches, step.precision, step.roof),
                         []).append(step)
    return tuple(group[0] if len(group) == 1 else
                 dataclasses.replace(group[0], name=f"{group[0].name} x{len(group)}",
                                     flops=group[0].flops * len(group), bytes=group[0].bytes * len(group),
                                     launches=group[0].launches * len(group))
                 for group in alike.values())


def compacted(entry: BenchmarkEntry) -> BenchmarkEntry:
    """``entry`` with the work its run recorded written again as :meth:`Work.to_json` writes it (steps alike
    merged): a baseline keeps its newest runs' entries whole, and runs recorded before the merge kept a
    whole-card layer stack step by step."""
    work = recorded_work(entry)
    if not isinstance(work, Work):
        return entry
    extra = {**entry.extra, WORK_KEY: work.to_json()}
    return dataclasses.replace(entry, raw={**entry.raw, "extra_info": extra})


@dataclass(frozen=True)
class NoModel:
    """Why the model says nothing of a benchmark; ``gpu``: False for work that is not a GPU's at all."""

    reason: str
    gpu: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "gpu": self.gpu, "version": WORK_VERSION}


def recorded_work(bench: BenchmarkEntry) -> Work | NoModel | None:
    """The work ``bench``'s run recorded (``extra_info.work``: the model's count, or why it has none); None
    where it recorded none, none that reads, or one counted by an older model (:data:`WORK_VERSION`: then it
    is counted from its records, as for files written before runs recorded it)."""
    raw = bench.extra.get(WORK_KEY)
    if isinstance(raw, Mapping) and raw.get("version", 1) != WORK_VERSION:
        return None
    if isinstance(raw, Mapping) and set(raw) - {"version"} == {"reason", "gpu"}:
        return NoModel(str(raw["reason"]), bool(raw["gpu"]))
    try:
        return None if raw is None else Work.from_json(raw)
    except ValueError:
        return None


#: Describes a benchmark's work from its records (perfkit.workloads.benchwork.work_of, which imports torch).
Workloads = Callable[[BenchmarkEntry, ResultSet], Work | NoModel]


@dataclass(frozen=True)
class Roofs:
    """A device's ceilings as the model reads them: ceiling key -> GB/s or TFLOP/s, and launch mode -> the
    seconds of one launch; ``notes`` say what came from elsewhere than the device's own measurements."""

    device: str
    ceilings: Mapping[str, float]
    launch_s: Mapping[str, float]
    notes: tuple[str, ...] = ()
    #: the device's datasheet, and the ceilings it measured (the others are its datasheet's)
    sheet: datasheet.GpuSpec | None = None
    measured: frozenset[str] = frozenset()
    #: the device that measured the launch costs, where these roofs' device measured none (a datasheet's, a
    #: multi-GPU run's): a comparison's rows say so (perfkit.verdict.multigpu.row_notes)
    launch_lender: str | None = None

    @classmethod
    def of(cls, results: ResultSet) -> Roofs:
        """What ``results`` measured (or was lent), the datasheet for ceilings it never measured; an
        all-reduce's bus bandwidth where it measured one (:func:`link_rates`)."""
        measured, sheet = Ceilings.of(results).values(), results.info.datasheet
        ceilings = {key: value for key in KEYS
                    if (value := measured.get(key) or (sheet.ceiling(key) if sheet else None))}
        notes = [f"{key} from the datasheet" for key in ceilings if key not in measured]
        runs, roofs = results.runs(), {*KEYS, GRAPH_REPLAY_S.name}
        locked = sorted({clock for b in results.benchmarks
                         if (clock := b.clock_lock) and runs[b.fullname].keys() & roofs})
        notes += [f"{results.hardware_id}'s roofs were timed at {clock}" for clock in locked]
        links = link_rates(results)
        return cls(results.hardware_id, ceilings | links, launch_costs(results), tuple(notes), sheet,
                   frozenset(measured) & frozenset(ceilings) | frozenset(links))

    @classmethod
    def of_datasheet(cls, spec: datasheet.GpuSpec, reference: Roofs) -> Roofs:
        """A device never measured: its datasheet's ceilings, each at the share of its datasheet figure that
        ``reference`` reached where it measured the same ceiling and its datasheet is known (sustained rates,
        not peaks: PALEO's platform percent of peak, carried over; the H200 baseline's GEMMs reached 59-69%
        of its datasheet, its copy 88%; an all-reduce's bus bandwidth the reference measured too), and the
        reference's launch costs (a datasheet lists none; a launch is mostly the host's work)."""
        ceilings, carried = {}, []
        links = sorted(key for key in reference.measured if datasheet.allreduce_gpus(key) is not None)
        for key in (*KEYS, *links):
            if not (value := spec.ceiling(key)):
                continue
            peak = reference.sheet.ceiling(key) if reference.sheet is not None else None
            if peak and key in reference.measured:
                value *= reference.ceilings[key] / peak
                carried.append(key)
            ceilings[key] = value
        shares = (f", each at the share of its datasheet {reference.device} reached ({', '.join(carried)})"
                  if carried else "")
        scaled = _scaled_from(spec, reference)
        notes = [f"ceilings from the datasheet{shares}"]
        if scaled:
            notes.append(f"{', '.join(sorted(scaled))} measured on {reference.device}, scaled by the "
                         "datasheets' boost clocks (one multiprocessor's copy) or host links (a first touch)")
        sheet = cls(spec.key, ceilings | scaled, {}, tuple(notes), spec)
        return sheet.with_launch_of(reference, "a datasheet lists none")

    def with_launch_of(self, lender: Roofs, why: str) -> Roofs:
        """These roofs with the launch costs ``lender`` measured (or was lent: then its lender's), said in
        the notes with ``why``: a launch is mostly the host's and the driver's work, which no datasheet lists
        and a run of several GPUs does not measure (it runs no one-element kernel)."""
        origin = lender.launch_lender or lender.device
        return dataclasses.replace(self, launch_s=dict(lender.launch_s), launch_lender=origin,
                                   notes=(*self.notes, f"launch costs measured on {origin} ({why})"))

    def ceiling(self, key: str) -> float | None:
        return self.ceilings.get(key)

    def issue_rate(self) -> float | None:
        """Multiprocessor cycles per second (SMs x boost clock, from the datasheet): the roof of work paced by
        neither memory nor FLOPs, such as a kernel's index arithmetic."""
        return self.sheet.issue_rate() if self.sheet is not None else None

    def flop_rate(self, precision: str) -> float:
        """FLOP/s of ``precision``'s matmul ceiling; a device without TF32 computes it in fp32, as PyTorch
        does there."""
        found = self.ceiling(datasheet.matmul_key(precision))
        if found is None and precision == "tf32":
            found = self.ceiling(datasheet.matmul_key("fp32"))
        if not found:
            key = datasheet.matmul_key(precision)
            raise NoRoof(f"{self.device} has no {key} (measured or on the datasheet)")
        return found * 1e12

    def byte_rate(self, key: str = datasheet.COPY) -> float:
        """Bytes/s of the ceiling ``key``: the device's copy; one thread's or one block's copy, or a first
        touch's page migration (measured only)."""
        if datasheet.allreduce_gpus(key) is not None:
            return self.link_rate(key)
        found = self.ceiling(key)
        if not found and key in ONE_SM_CEILINGS | FIRST_TOUCH_CEILINGS:
            test = "test_one_sm_copy" if key in ONE_SM_CEILINGS else "test_first_touch"
            raise NoRoof(f"{self.device} has no measured {key} (no datasheet lists it: "
                         f"benches/test_ceilings.py::{test} measures it, weekly)")
        if not found:
            raise NoRoof(f"{self.device} has no {key} (measured or on the datasheet)")
        return found * 1e9

    def link_rate(self, key: str) -> float:
        """Bytes/s of the all-reduce roof ``key``: the bus bandwidth measured among its GPUs (or carried to a
        datasheet at the share measured at hand), else the datasheet's (half its NVLink figure)."""
        found = self.ceiling(key) or (self.sheet.ceiling(key) if self.sheet is not None else None)
        if not found:
            gpus = datasheet.allreduce_gpus(key)
            sheet = (f"its datasheet ({self.sheet.key}) lists no NVLink bandwidth" if self.sheet is not None
                     else "no datasheet lists its GPU")
            raise NoRoof(f"{self.device} has no all-reduce bus bandwidth among {gpus} GPUs: it measured no "
                         f"benches/test_data_parallel.py::test_allreduce_busbw[gpus{gpus}] and {sheet}")
        return found * 1e9

    def link_source(self, key: str) -> str:
        """An all-reduce roof's rate and where it came from, in words ('329 GB/s measured')."""
        value = self.link_rate(key) / 1e9
        if key in self.measured:
            return f"{value:.0f} GB/s measured"
        if key in self.ceilings:
            return f"{value:.0f} GB/s (its datasheet's, at the share measured at hand)"
        return f"{value:.0f} GB/s (half its datasheet's NVLink)"

    def launch(self, mode: str) -> float:
        if mode not in self.launch_s:
            raise NoRoof(f"{self.device} holds no {LAUNCH_FIGURES[mode]} of the one-element kernel "
                         "(benches/test_timer_fidelity.py::test_timer_fidelity[tiny]): no launch cost")
        return self.launch_s[mode]


def _scaled_from(spec: datasheet.GpuSpec, reference: Roofs) -> dict[str, float]:
    """The ceilings no datasheet lists, for a device never measured: each one ``reference`` measured, times
    the ratio of the datasheet figure that paces it on the two devices: one multiprocessor's copy its boost
    clock (the H200 and the H100 SXM, 1980 MHz both, measured 0.96-1.00 of each other's), a first touch of
    managed memory its host link (the pages cross PCIe, though the host's fault handling, not the link, sets
    their pace: 7-10 GB/s on links of 64 GB/s each way). None where either datasheet lacks the figure."""
    if reference.sheet is None:
        return {}
    paces: dict[str, tuple[float | None, float | None]] = {
        key: (spec.boost_mhz, reference.sheet.boost_mhz) for key in ONE_SM_CEILINGS}
    paces |= {key: (spec.host_link_gbps, reference.sheet.host_link_gbps) for key in FIRST_TOUCH_CEILINGS}
    return {key: reference.ceilings[key] * now / then for key, (now, then) in paces.items()
            if key in reference.measured and now and then}


def link_rates(results: ResultSet) -> dict[str, float]:
    """All-reduce roof key -> GB/s: per GPU count, the median over its runs of test_allreduce_busbw's bus
    bandwidth (nccl-tests' busbw of its largest message, the figure perfkit.parallel.scaling.record_sweep
    records: the links' pace, not their latency)."""
    runs, found = results.runs(), {}
    for bench, sweep in results.family(AllreduceSweep):
        if values := runs.get(bench.fullname, {}).get(BUSBW.name):
            found[datasheet.allreduce_key(sweep.gpus)] = float(statistics.median(values))
    return found


def launch_costs(results: ResultSet) -> dict[str, float]:
    """Launch mode -> seconds of one launch: the median over its runs of the benchmark that replays a
    one-element kernel as a CUDA graph (the only one that records ``graph_replay_s``)."""
    for figures in results.runs().values():
        if figures.get(GRAPH_REPLAY_S.name):
            return {mode: float(statistics.median(figures[name]))
                    for mode, name in LAUNCH_FIGURES.items() if figures.get(name)}
    return {}


@dataclass(frozen=True)
class Estimate:
    """The model's time of a work on a device: steps bound by their FLOPs, steps bound by their bytes, their
    launches; and on several GPUs the all-reduce no backward hid (``communication_s``) beside the part it did
    (``hidden_s``, not in the time)."""

    compute_s: float
    memory_s: float
    launch_s: float
    migration_s: float = 0.0  # managed pages moved from the host (a first launch on managed memory)
    communication_s: float = 0.0
    hidden_s: float = 0.0

    @property
    def seconds(self) -> float:
        return self.compute_s + self.memory_s + self.launch_s + self.migration_s + self.communication_s

    def shares(self) -> dict[str, float]:
        """compute, memory, launch (migration, all-reduce, where there are any) -> its share of the time."""
        total = self.seconds or 1.0
        shares = {"compute": self.compute_s / total, "memory": self.memory_s / total,
                  "launch": self.launch_s / total}
        extra = {"migration": self.migration_s, ALLREDUCE: self.communication_s}
        return shares | {name: seconds / total for name, seconds in extra.items() if seconds}

    def split(self) -> str:
        """'compute 71%, memory 28%, launch 1%' (and the all-reduce the backward hid, beyond the time)."""
        said = ", ".join(f"{name} {share:.0%}" for name, share in self.shares().items())
        hidden = f" (+{self.hidden_s / (self.seconds or 1.0):.0%} all-reduce hidden)" if self.hidden_s else ""
        return said + hidden


def timed_as(work: Work | NoModel, bench: BenchmarkEntry) -> Work | NoModel:
    """``work`` with the launch cost its figure holds: a kernel timed alone (:data:`TIMED_ALONE`) pays the
    device's floor of one kernel, not the host's pace of launching them (the 1 M-element vector add's
    ``kernel_s``, 8.4 us on the H200 and 9.8 us on the H100 of 2026-11-27, is about 4.3 and 4.6 us of that
    floor and its bytes at the copy ceiling, where the host's eager launch pace read 6.9 and 8.7 us); the
    same kernel timed back to back (a GPU whose L2 cannot hold its arrays) keeps the host's pace.

    A work recorded with a gate that is a ratio (a launch over a copy timed beside it, ``over_one_sm_copy``)
    is read by the time that ratio is of: the kernel's own where the benchmark records it, else its time; a
    ratio read as seconds printed "over_one_sm_copy 1.071 s"."""
    if not isinstance(work, Work):
        return work
    if work.images is None and work.figure in bench.metrics and bench.metrics[work.figure].unit == "ratio":
        work = dataclasses.replace(work, figure=KERNEL_S.name if KERNEL_S.name in bench.metrics else TIME)
    method = method_of(bench.fullname, work.figure, bench.method(work.figure))
    return dataclasses.replace(work, launch=ALONE) if method in TIMED_ALONE else work


def estimate(work: Work, roofs: Roofs) -> Estimate:
    """The sum over ``work``'s steps of ``max(flops / flop rate, bytes / byte rate)``, plus its launches. An
    all-reduce's steps move their bytes at its bus bandwidth: an ALLREDUCE step adds its time, the
    ALLREDUCE_HIDDEN steps only what outlasts the backward (its steps and their launches) they run under."""
    per_launch = roofs.launch(work.launch)
    compute = memory = migration = exposed = hideable = backward = 0.0
    launches = 0
    for step in work.steps:
        flop_s = step.flops / roofs.flop_rate(step.precision) if step.flops else 0.0
        byte_s = step.bytes / roofs.byte_rate(step.roof)
        if step.kind == MIGRATE:
            migration += byte_s
        elif step.kind == ALLREDUCE:
            exposed += byte_s
        elif step.kind == ALLREDUCE_HIDDEN:
            hideable += byte_s
        elif flop_s >= byte_s:
            compute += flop_s
        else:
            memory += byte_s
        if step.kind == BACKWARD:
            backward += max(flop_s, byte_s) + step.launches * per_launch
        launches += step.launches
    outlasting = max(0.0, hideable - backward)
    return Estimate(compute, memory, launches * per_launch, migration, exposed + outlasting,
                    hideable - outlasting)
