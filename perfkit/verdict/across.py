"""Across hardware: each benchmark's measured speedup beside the speedup expected of it.

Someone choosing hardware compares two baselines of different machines: no regression or improvement of the
code, but a speedup per benchmark (baseline time / current time, the mean over each side's runs; a rate's
current over baseline) and what to expect of it:

- a kernel that names the ceiling its time follows (a copy, a GEMM, one layer) expects that ceiling's ratio,
  each side held to its own (a convolution bound by TF32 on a GPU is bound by fp32 on a CPU);
- the one-element kernel that measures the cost of a launch expects that cost's ratio;
- every other GPU benchmark whose work perfkit can count (a network's layers, a streaming kernel) expects the
  ratio of the per-layer roofline model's times on the two devices (perfkit.verdict.expected), read with
  each device's own ceilings and launch costs.

A benchmark without an expectation says why. Against its expectation a speedup is ``as expected`` within
x1.15 either way, ``faster`` or ``slower`` than expected within x1.25, and ``FAR from expected`` beyond. The
same expectations serve a device never measured (``perfkit predict``): its roofs come from the datasheet.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from perfkit.resultfile import datasheet
from perfkit.resultfile.figures import GRAPH_REPLAY_S, SHARE_OF_COPY_PEAK, SHARE_OF_PEAK, TIME
from perfkit.resultfile.model import BenchmarkEntry, ResultSet
from perfkit.verdict import multigpu, stats
from perfkit.verdict.expected import (
    EAGER,
    GRAPH,
    Estimate,
    NoModel,
    NoRoof,
    Roofs,
    Work,
    Workloads,
    estimate,
    timed_as,
)
from perfkit.verdict.matching import clocks_apart

AS_EXPECTED, FASTER, SLOWER, FAR_FROM = "as expected", "faster", "slower", "FAR from expected"
#: Said of a benchmark the comparison was not given perfkit's workloads for (perfkit compare gives them).
#: Below half the ceiling a kernel names it is paced by something else, its multiprocessors' index
#: arithmetic: max pooling over three channels reached 19-45% of the copy ceiling on the H200 and H100
#: baselines of 2026-11-27 (ReLU, bound by it, 95-97%), and sped up 1.03-1.05x from the H200 to the H100 (the
#: copy ceiling expects 0.71x; both have 132 SMs at 1980 MHz)
#: Under a twentieth of it a kernel does not fill the GPU (one thread's or one block's copy, a first touch
#: paced by the host link): no issue roof
ISSUE_SHARES = (0.05, 0.5)
#: A kernel within this many launch costs of its time is paced by its launches, not its multiprocessors
LAUNCH_BOUND = 10
NO_WORKLOADS = "its work was not counted (this comparison was made without perfkit's workloads)"


@dataclass(frozen=True)
class Modelled:
    """The model's estimate of a benchmark's work on each device; ``notes``: the roofs it read that the split
    of its time does not say (an all-reduce's bus bandwidth, launch costs lent by another device)."""

    label: str
    baseline: Estimate
    current: Estimate
    notes: tuple[str, ...] = ()
    # the baseline device's measured time of one unit beyond its model (the part no roof explains), and the
    # factor it takes on the current device (its SMs x clock against the baseline's; see :func:`_beyond`)
    residual_s: float = 0.0
    residual_factor: float = 1.0
    # where the baseline device ran faster than its roofs (bytes kept on chip, :func:`_on_chip`): its measured
    # time beyond its launches, which takes ``residual_factor`` on the current device in place of the roofs
    on_chip_s: float = 0.0

    @property
    def expected(self) -> float:
        """The baseline's time over the current's: each the model's time plus the part of the baseline's
        measured time the roofs do not explain, at the current device's pace for it (or, for bytes kept on
        chip, each its launches plus the baseline's time beyond them at that pace)."""
        if self.on_chip_s:
            return ((self.baseline.launch_s + self.on_chip_s)
                    / (self.current.launch_s + self.on_chip_s * self.residual_factor))
        return ((self.baseline.seconds + self.residual_s)
                / (self.current.seconds + self.residual_s * self.residual_factor))


@dataclass(frozen=True)
class Expectation:
    """The speedup expected of a benchmark from one device to another: ``bound``, the ceiling (a kernel's own)
    it came from, or ``model``, the roofline model's estimates; ``why`` there is none; ``figure``, the one
    the speedup is read from; ``gpu``: False for host work, which no GPU speedup speaks of."""

    expected: float | None
    bound: str | None = None
    model: Modelled | None = None
    why: str = ""
    figure: str = TIME
    gpu: bool = True

    def source(self) -> str:
        return _source(self.bound, self.model, self.why)


def _source(bound: str | None, model: Modelled | None, why: str) -> str:
    """Where an expectation came from: the ceiling, the model's split of the second device's time, or why
    there is none."""
    if model is not None:
        return "; ".join((f"model: {model.current.split()}", *model.notes))
    return bound or f"none: {why}"


#: How a row whose two sides were measured differently begins its ``why``.
MEASURED_APART = "measured differently"


@dataclass(frozen=True)
class HardwareRow:
    """A benchmark's measured speedup beside its expectation; ``measured``: where the model gave it, each
    side's measured seconds of one unit of the work (a call, a step), to set against the model's."""

    benchmark: str
    speedup: float
    bound: str | None
    expected: float | None
    figure: str = TIME
    model: Modelled | None = None
    why: str = ""
    gpu: bool = True
    measured: tuple[float, float] | None = None
    # the benchmark measures the ceiling (or the launch cost) its expectation is the ratio of: its speedup is
    # that ratio by definition, no check of the expectation
    by_definition: bool = False
    # each side's slowest run of its time over its fastest (1.0 for a single run): how far apart its own runs,
    # on that side's machines, lie
    spread: tuple[float, float] = (1.0, 1.0)

    #: Within this factor either way a speedup is as expected
    NEAR: ClassVar[float] = 1.15
    #: The factor, either way, by which a speedup may miss its expectation before it needs explaining
    FAR: ClassVar[float] = 1.25

    @property
    def measured_differently(self) -> bool:
        """Its two sides measured its figure by other methods or clocks held another way: no speedup read."""
        return self.why.startswith(MEASURED_APART)

    @property
    def ratio(self) -> float | None:
        """Measured over expected speedup."""
        return None if self.expected is None else self.speedup / self.expected

    @property
    def checks(self) -> bool:
        """Its speedup checks an expectation: it has one, and it is not the ratio the benchmark measures
        (a ceiling's own benchmark agrees with it by definition). The one count of the summaries, the chart
        and the dashboard, which counted three ways (a newcomer's CPU pair read 0 of 0, 10, and 0 of 8)."""
        return self.expected is not None and not self.by_definition

    @property
    def far(self) -> bool:
        """The speedup misses its expectation by more than the factor FAR."""
        return self.ratio is not None and not 1 / self.FAR <= self.ratio <= self.FAR

    @property
    def within_spread(self) -> bool:
        """Its miss is no larger than its own runs' spread on the two sides together: the runs of one kind of
        machine lie as far apart as the speedup lies from its expectation (host-paced work: a first touch of
        managed memory moved x1.32 over three runs of one H200), so the model cannot be checked closer."""
        ratio = self.ratio
        return ratio is not None and abs(math.log(ratio)) <= sum(math.log(s) for s in self.spread)

    def reason(self) -> str:
        """Why a speedup FAR from its expectation says nothing against the model, where its runs say so."""
        if not (self.far and self.within_spread):
            return ""
        return (f"within its own runs' spread (slowest over fastest x{self.spread[0]:.3g} on the baseline's "
                f"machines, x{self.spread[1]:.3g} on the current's)")

    @property
    def verdict(self) -> str | None:
        """as expected, faster, slower (than expected) or FAR from expected; None without an expectation."""
        ratio = self.ratio
        if ratio is None:
            return None
        if 1 / self.NEAR <= ratio <= self.NEAR:
            return AS_EXPECTED
        return FAR_FROM if self.far else FASTER if ratio > 1 else SLOWER

    def errors(self) -> tuple[float, float] | None:
        """Measured over modelled time on the baseline's and the current device: how far each is from its
        roofs."""
        if self.model is None or self.measured is None:
            return None
        return self.measured[0] / self.model.baseline.seconds, self.measured[1] / self.model.current.seconds

    def source(self) -> str:
        """Where the expectation came from; for the model, how many times its time the current device
        measured (far above its roofs: host-bound or launch-bound)."""
        errors = self.errors()
        measured = f"; measured x{errors[1]:.2g} its time" if errors else ""
        reason = f"; {self.reason()}" if self.reason() else ""
        return _source(self.bound, self.model, self.why) + measured + reason

    def sentence(self) -> str:
        """The speedup against its expectation, as a verdict's note."""
        if self.ratio is None:
            return f"speedup {self.speedup:.3g}x; no expectation: {self.why}"
        return (f"speedup {self.speedup:.3g}x ({self.figure}), expected {self.expected:.3g}x from "
                f"{self.source()}: measured/expected x{self.ratio:.3g}")


@dataclass(frozen=True)
class _Target:
    """A device as an expectation reads it: its roofs, and what it knows of one benchmark there."""

    roofs: Roofs
    work: Work | NoModel
    bound: str | None
    launch: bool  # the benchmark measures the launch cost (it replays a one-element kernel as a graph)
    gpu: bool
    share: float | None = None  # the share of its bound ceiling the benchmark reached here
    seconds: float | None = None  # its time here (a call of a kernel)


@dataclass(frozen=True)
class _Side:
    results: ResultSet
    entries: dict[str, BenchmarkEntry]
    runs: dict[str, dict[str, list[float]]]
    roofs: Roofs
    workloads: Workloads | None
    own_roofs: bool = True  # the roofs are these results' own (not a datasheet's, for a run held out)

    @classmethod
    def of(cls, results: ResultSet, workloads: Workloads | None, roofs: Roofs | None = None,
           lenders: Sequence[ResultSet] = ()) -> _Side:
        """``results`` on their own roofs (the launch costs of the one-GPU run of its GPU among ``lenders``
        where it measured none), or on ``roofs`` (a datasheet's, for a run held out)."""
        return cls(results, results.by_name(), results.runs(), roofs or multigpu.roofs_of(results, lenders),
                   workloads, roofs is None)

    def mean(self, name: str, figure: str) -> float | None:
        """The runs' geometric mean, as the judge takes a side's level from mean logs (an arithmetic mean of
        1, 1 and 3 ms read a 1.6 ms run faster, where the logs read it 11% slower); the arithmetic one where a
        run is not positive."""
        values = self.runs[name].get(figure)
        return stats.geometric(values) if values else None

    def spread(self, name: str) -> float:
        """The slowest run of ``name``'s time over its fastest (1.0 for one run)."""
        values = [v for v in self.runs[name].get(TIME, ()) if v > 0]
        return max(values) / min(values) if values else 1.0

    def target(self, name: str, roofs: Roofs | None = None) -> _Target:
        """This side's view of ``name``; on ``roofs`` instead of its own for a device never measured."""
        work = (NoModel(NO_WORKLOADS) if self.workloads is None
                else timed_as(self.workloads(self.entries[name], self.results), self.entries[name]))
        bound = self.entries[name].context.bound
        figure = SHARE_OF_COPY_PEAK.name if bound == datasheet.COPY else SHARE_OF_PEAK.name
        share = self.mean(name, figure) if bound else None
        return _Target(roofs or self.roofs, work, bound, bool(self.mean(name, GRAPH_REPLAY_S.name)),
                       self.results.info.device == "cuda", share, self.mean(name, TIME))


def hardware_rows(baseline: ResultSet, current: ResultSet, names: Sequence[str],
                  workloads: Workloads | None = None, current_roofs: Roofs | None = None,
                  lenders: Sequence[ResultSet] = ()) -> tuple[HardwareRow, ...]:
    """One row per benchmark both sets hold; ``workloads`` counts a benchmark's work for the model (without
    it only kernels that name a ceiling get an expectation); ``current_roofs``: the current device's roofs
    taken from elsewhere than its own run (its datasheet, to check a prediction that held the run out);
    ``lenders``: one-GPU runs that lend a side of several GPUs their launch costs
    (perfkit.verdict.multigpu)."""
    base = _Side.of(baseline, workloads, lenders=lenders)
    cur = _Side.of(current, workloads, current_roofs, lenders)
    return tuple(_measured(name, base, cur, *_aligned(name, base, cur)) for name in names)


@dataclass(frozen=True)
class Prediction:
    """A benchmark's expected time on a device never measured: what a device at hand (the reference) measured
    of one unit of its work, over the speedup expected from there."""

    benchmark: str
    expectation: Expectation
    reference_s: float | None

    @property
    def predicted_s(self) -> float | None:
        expected = self.expectation.expected
        return None if expected is None or self.reference_s is None else self.reference_s / expected


def predictions(reference: ResultSet, roofs: Roofs, names: Sequence[str], workloads: Workloads,
                lenders: Sequence[ResultSet] = ()) -> tuple[Prediction, ...]:
    """What ``reference``'s benchmarks are expected to take on a device known only by its ``roofs``
    (``lenders``: as for :func:`hardware_rows`)."""
    base = _Side.of(reference, workloads, lenders=lenders)
    out = []
    for name in names:
        then = base.target(name)
        found = expect(then, base.target(name, roofs))
        measured = base.mean(name, found.figure)
        if isinstance(then.work, Work) and found.model is not None and measured:
            measured = then.work.seconds(measured)
            # as a comparison expects it (:func:`_measured`): the reference's time beyond its roofs too
            model = _beyond(found.model, then.work, measured, then.roofs, roofs)
            found = dataclasses.replace(found, expected=model.expected, model=model)
        out.append(Prediction(name, found, measured))
    return tuple(out)


def _aligned(name: str, base: _Side, cur: _Side) -> tuple[_Target, _Target]:
    """Both sides' views, their works read by the same figure: a side whose benchmark gated on another
    figure when it ran reads the other's where both hold it (a figure other than the time first: a CUDA-graph
    replay, a kernel's own time, what the benchmark's verdict rests on now)."""
    then, now = base.target(name), cur.target(name)
    if not (isinstance(then.work, Work) and isinstance(now.work, Work)):
        return then, now
    held = [w for w in (now.work, then.work) if base.mean(name, w.figure) and cur.mean(name, w.figure)]
    shared = min(held, key=lambda w: w.figure == TIME, default=now.work)

    def read_as(work: Work) -> Work:
        return dataclasses.replace(work, figure=shared.figure, launch=shared.launch, images=shared.images)

    return (dataclasses.replace(then, work=read_as(then.work)),
            dataclasses.replace(now, work=read_as(now.work)))


def expect(then: _Target, now: _Target) -> Expectation:
    """The speedup expected from device ``then`` to device ``now`` (see the module's docstring for the
    order: the launch kernel, a network's layers, a kernel's ceiling, any other counted work)."""
    gpu = then.gpu and now.gpu
    if gpu and then.launch and now.launch:
        expected = then.roofs.launch(GRAPH) / now.roofs.launch(GRAPH)
        return Expectation(expected, GRAPH_REPLAY_S.name, figure=GRAPH_REPLAY_S.name)
    counted = isinstance(then.work, Work) and isinstance(now.work, Work)
    if counted and isinstance(then.work, Work) and then.work.network:
        return _modelled(then, now)
    if then.bound and now.bound and (issue := _issue_bound(then, now)) is not None:
        return issue
    if then.bound and now.bound:
        old, new = then.roofs.ceiling(then.bound), now.roofs.ceiling(now.bound)
        shown = now.bound if now.bound == then.bound else f"{then.bound} -> {now.bound}"
        if old and new:
            return Expectation(new / old, shown, gpu=gpu)
        return Expectation(None, shown, why=f"a side has no {then.bound if not old else now.bound}", gpu=gpu)
    if counted:
        return _modelled(then, now)
    unmodelled = [w for w in (then.work, now.work) if isinstance(w, NoModel)]
    return Expectation(None, why=unmodelled[-1].reason, gpu=gpu and all(w.gpu for w in unmodelled))


def _issue_bound(then: _Target, now: _Target) -> Expectation | None:
    """A kernel far below the ceiling it names on the first device (between ISSUE_SHARES of it) and far
    above its launch cost is paced by its multiprocessors' issue rate: the roofline's lower roof, the ratio
    of SMs x clock where both datasheets list them, and never more than its bytes allow at the ceiling's
    ratio (``ratio / share``: where the second device's memory is slow enough, memory paces it there); None
    otherwise (the ceiling's ratio, as before). Only the first device's share is read, so that a prediction
    of the second reads nothing of it."""
    low, high = ISSUE_SHARES
    if then.share is None or not low <= then.share < high:
        return None
    launch = then.roofs.launch_s.get(EAGER)
    if then.seconds is None or (launch and then.seconds < LAUNCH_BOUND * launch):
        return None
    old, new = then.roofs.issue_rate(), now.roofs.issue_rate()
    if not (old and new):
        return None
    expected = new / old
    ceilings = then.roofs.ceiling(then.bound or ""), now.roofs.ceiling(now.bound or "")
    if ceilings[0] and ceilings[1]:
        expected = min(expected, ceilings[1] / ceilings[0] / then.share)
    return Expectation(expected, f"SMs x clock ({then.share:.0%} of {then.bound}: not paced by it)",
                       gpu=then.gpu and now.gpu)


def _modelled(then: _Target, now: _Target) -> Expectation:
    assert isinstance(then.work, Work) and isinstance(now.work, Work)
    try:
        model = Modelled(now.work.label, estimate(then.work, then.roofs), estimate(now.work, now.roofs),
                         multigpu.row_notes(now.work, then.roofs, now.roofs))
    except NoRoof as exc:
        return Expectation(None, why=str(exc), figure=now.work.figure)
    return Expectation(model.expected, model=model, figure=now.work.figure)


def _measured(name: str, base: _Side, cur: _Side, then: _Target, now: _Target) -> HardwareRow:
    """The expectation beside the speedup measured by its figure (a ceiling's own benchmark by its rate);
    none where the two sides measured that figure (or a ceiling benchmark's own rate) by different methods."""
    found = expect(then, now)
    old, new = base.mean(name, TIME) or 0.0, cur.mean(name, TIME) or 0.0
    row = HardwareRow(name, old / new if new > 0 else math.inf, found.bound, found.expected, found.figure,
                      found.model, found.why, found.gpu, spread=(base.spread(name), cur.spread(name)))
    read = sorted({f for f in (found.figure, then.bound, now.bound) if f})
    if (differently := _measured_differently(base, cur, name, read)):
        return dataclasses.replace(row, expected=None, model=None, why=differently)
    if found.model is not None and isinstance(then.work, Work) and isinstance(now.work, Work):
        figures = base.mean(name, found.figure), cur.mean(name, found.figure)
        if not figures[0] or not figures[1]:
            return dataclasses.replace(row, expected=None, model=None, why=f"a side holds no {found.figure}")
        seconds = then.work.seconds(figures[0]), now.work.seconds(figures[1])
        model = _beyond(found.model, then.work, seconds[0], then.roofs, now.roofs)
        return dataclasses.replace(row, speedup=seconds[0] / seconds[1], measured=seconds, model=model,
                                   expected=model.expected)
    if found.expected is not None and (then.launch or (then.bound and base.mean(name, then.bound)
                                                       and now.bound and cur.mean(name, now.bound))):
        # a benchmark that measures its ceiling compares by that rate, not its time: its size may differ by
        # device (the quick profile copies 1 GiB on a GPU and 64 MiB on a CPU)
        if cur.own_roofs:
            return dataclasses.replace(row, speedup=found.expected, by_definition=True)
        # held out: what each side measured (the launch's time, else the ceiling's rate), against the
        # datasheet's expectation
        if then.launch:
            faster, slower = base.mean(name, GRAPH_REPLAY_S.name), cur.mean(name, GRAPH_REPLAY_S.name)
        else:
            faster, slower = cur.mean(name, now.bound or ""), base.mean(name, then.bound or "")
        return dataclasses.replace(row, speedup=faster / slower) if faster and slower else row
    return row


def _measured_differently(base: _Side, cur: _Side, name: str, figures: Sequence[str]) -> str:
    """Why the two sides' ``figures`` of ``name`` cannot be set against each other: the first measured by
    different methods on each (figures.METHODS; the graph replay on one element's address against 200, the
    100 M first launches after the host's write against after a prefetch), or timed with the GPUs' clocks held
    another way (the judge's rule, matching.clocks_apart), or "" where neither was."""
    then, now = base.entries[name], cur.entries[name]
    for figure in figures:
        if (old := then.method(figure)) != (new := now.method(figure)):
            return (f"{MEASURED_APART}: method {old} on the first device, {new} on the second "
                    f"({figure}); re-save the older baseline's entry")
    clocks = clocks_apart(base.results, cur.results, then, now)
    return f"{MEASURED_APART}: {clocks}" if clocks else ""


def _beyond(model: Modelled, work: Work, measured_s: float, then: Roofs, now: Roofs) -> Modelled:
    """``model`` with the baseline device's time beyond its roofs carried to the current device.

    The roofs are lower bounds no network reaches (ResNets' training steps measured 1.7-2.5 times their
    model's time); scaling only the modelled part by the roofs' ratio expected the H100 0.77-0.84x of the
    H200 for memory-heavy steps that measured 0.84-0.91x (x1.08-1.12 off), the H200's extra bandwidth
    unused by kernels far below it. The part beyond the roofs is the multiprocessors' own pace (the issue
    roof, SMs x clock, as for a kernel far below its ceiling), so it takes their ratio; where launches are
    most of the model's time it is the host's (the Python dispatch of eager launches), which no datasheet
    gives: it takes the ratio of the two hosts' eager launch pace, each measured in its own run by the
    one-element kernel (1.0 where one side's is lent: a device never measured, or a run of several GPUs).
    The 1-GPU DDP ResNet-18 step, launches 82% of its model and 8.5 times its model's time on the H100,
    measured x0.84 of the H200 where SMs x clock expected x0.97; the H100 host's eager launches took 8.7 us
    against the H200 host's 6.9 (2026-11-27 baselines). Nothing is carried where a datasheet lists no SMs x
    clock; where the device ran faster than its model, see :func:`_on_chip`."""
    residual = measured_s - model.baseline.seconds
    old, new = then.issue_rate(), now.issue_rate()
    if not (old and new):
        return model
    if residual < 0 and not model.baseline.compute_s and all(s.roof == datasheet.COPY for s in work.steps):
        return _on_chip(model, measured_s, old / new)
    if residual <= 0:
        return model
    if model.baseline.shares()["launch"] <= 0.5:
        factor = old / new
    else:  # a kernel timed alone (its launch the device's floor) keeps its time beyond as measured
        factor = _host_pace(then, now) if work.launch == EAGER else 1.0
    return dataclasses.replace(model, residual_s=residual, residual_factor=factor)


def _host_pace(then: Roofs, now: Roofs) -> float:
    """How much longer the current host takes to launch a kernel from Python than the baseline's: the ratio
    of their one-element kernels' eager launch pace, where each run measured its own (a lent one says nothing
    of the host it is lent to: 1.0)."""
    if then.launch_lender or now.launch_lender or not (then.launch_s.get(EAGER) and now.launch_s.get(EAGER)):
        return 1.0
    return now.launch_s[EAGER] / then.launch_s[EAGER]


def _on_chip(model: Modelled, measured_s: float, factor: float) -> Modelled:
    """``model`` for a device that ran faster than its roofs, a streaming work (no FLOP-bound step) whose
    bytes were all priced at the copy ceiling: they did not all come from memory (an L2-resident working
    set: the 1 M-element vector add's warm kernel on managed memory, 12 MB in a 50 MB L2, ran 6.1 us on the
    H200 and 6.2 us on the H100 of 2026-11-27, where HBM's pace expected x0.83). Its launch stays the
    model's, and what it measured beyond that takes ``factor``, the SMs x clock ratio."""
    beyond_launch = measured_s - model.baseline.launch_s
    if beyond_launch <= 0:
        return model
    note = ("faster than its roofs: its bytes stayed on chip, its time beyond its launches at SMs x clock's "
            "pace (on either device's L2, which no datasheet here lists)")
    return dataclasses.replace(model, on_chip_s=beyond_launch, residual_factor=factor,
                               notes=(*model.notes, note))


def geomean_time_ratio(rows: Sequence[HardwareRow]) -> float | None:
    """The geometric mean of current time over baseline time (a ceiling's benchmark counted at its rate), of
    the benchmarks both sides measured alike, as on one machine (perfkit.verdict.time_ratios)."""
    return stats.geometric_mean([1 / r.speedup for r in rows if r.speedup > 0 and not r.measured_differently])
