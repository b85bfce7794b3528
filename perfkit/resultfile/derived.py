"""Figures that combine benchmarks, computed in one pure pass over a finished result set.

No benchmark hands a number to another while the run goes on: a bench records what it measured
and its family record (perfkit.resultfile.payloads); this pass then adds every figure that needs a
partner (the speedup over the 1-GPU run of the same job, a swapped/normal ratio, the speedup over
the CPU loop, a share of the machine's measured ceilings). So the figures do not depend on order,
``-k``, ``--lf`` or a parallel runner; where the partner is not in the result set, the figure is
absent with the reason. The plugin runs it as the run writes its JSON, and the loader
(perfkit.resultfile.load) runs it on every file it reads, with the ceilings of one rule
(perfkit.resultfile.ceilings), so a file merged from several runs or cut short is judged the same way.
Running it twice changes nothing.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from perfkit.errors import BaselineError
from perfkit.resultfile import comm, datasheet, figures
from perfkit.resultfile.ceilings import Ceilings
from perfkit.resultfile.metrics import Metric, MetricSpec
from perfkit.resultfile.model import BenchmarkEntry, ResultSet
from perfkit.resultfile.payloads import Ppp, RatePeak, Roofline, Scaling, TimeToAccuracy, VectorAdd, VggSwap
from perfkit.resultfile.roofline import place

GB = 1e9
SCALING_FIGURES = (figures.SPEEDUP, figures.SCALING_EFFICIENCY)
COURSE_FIGURES = (figures.COMM_SUBTRACTION_MS, figures.COURSE_BANDWIDTH)


class _Additions:
    """The metrics and absences the pass adds, per benchmark; applied to the result set at the end."""

    def __init__(self) -> None:
        self.metrics: dict[str, dict[str, Metric]] = defaultdict(dict)
        self.absent: dict[str, dict[str, str]] = defaultdict(dict)

    def record(self, bench: BenchmarkEntry, spec: MetricSpec, value: float) -> None:
        self.metrics[bench.fullname][spec.name] = Metric(float(value), spec.unit, spec.better, gate=spec.gate,
                                                            exact=spec.exact)
        self.absent[bench.fullname].pop(spec.name, None)

    def missing(self, bench: BenchmarkEntry, spec: MetricSpec, reason: str) -> None:
        self.absent[bench.fullname][spec.name] = reason
        self.metrics[bench.fullname].pop(spec.name, None)

    def apply(self, results: ResultSet) -> ResultSet:
        return results.with_benchmarks(
            [
                b.with_metrics(self.metrics.get(b.fullname, {}), self.absent.get(b.fullname, {}))
                for b in results.benchmarks
            ]
        )


#: Why a ratio is absent where what it divides by is 0 (a file of zero times: damaged, or made up by hand).
OVER_ZERO = "what it divides by is 0 in this result set, so there is no ratio"


def _ratio(add: _Additions, bench: BenchmarkEntry, spec: MetricSpec, over: float, under: float) -> None:
    """``over / under`` as ``spec``, or absent with :data:`OVER_ZERO` where ``under`` is 0."""
    if under:
        add.record(bench, spec, over / under)
    else:
        add.missing(bench, spec, OVER_ZERO)


def derive(results: ResultSet, lender: Ceilings | None = None) -> ResultSet:
    """``results`` with every cross-benchmark figure added (idempotent).

    ``lender``: the ceilings of a baseline of the same machine, for keys this set did not measure; they are
    kept in the set (``baseline_ceilings``) so the file derives the same way on its own later.
    """
    ceilings = Ceilings.of(results, lender)
    add = _Additions()
    for bench in results.benchmarks:
        _share_of_ceiling(add, bench, ceilings)
    _speedup_vs_cpu(add, results)
    _swap_ratios(add, results)
    _ppp(add, results, ceilings)
    _roofline(add, results, ceilings)
    _scaling(add, results)
    _tta_variants(add, results)
    return add.apply(results).with_info(ceilings=ceilings.own(), lent_ceilings=ceilings.lent())


#: A rate this far above the measured copy ceiling came from a cache (a run's own noise moves a share by a few
#: percent at most).
CACHED = 1.1


def _share_of_ceiling(add: _Additions, bench: BenchmarkEntry, ceilings: Ceilings) -> None:
    """``share_of_peak`` (TFLOP/s) or ``share_of_copy_peak`` (GB/s): the rate over the ceiling it names."""
    try:
        peak = bench.record(RatePeak)
    except BaselineError:  # an unreadable record loses this figure, never the entry
        return
    if peak is None:
        return
    copy = peak.key == datasheet.COPY
    rate, share = ((figures.BANDWIDTH, figures.SHARE_OF_COPY_PEAK) if copy
                   else (figures.TFLOPS, figures.SHARE_OF_PEAK))
    value, ceiling = bench.value(rate), ceilings.value(peak.key)
    if value is None:
        add.missing(bench, share, f"no {rate.name} was measured to share")
    elif ceiling is None:
        add.missing(bench, share, f"no measured {peak.key}: run benches/test_ceilings.py in the same run")
    elif copy and value > CACHED * ceiling:
        # a share well above 1 is no share of that ceiling: the work's data stayed in a cache (a CPU ReLU of
        # the quick profile streamed 4-7 times the copy ceiling), which the memory-copy roof does not bound
        above = f"its {value:.3g} {rate.unit} is above the measured {peak.key} of {ceiling:.3g}"
        add.missing(bench, share, f"{above}: its data stayed in cache, which that ceiling does not bound")
    else:
        add.record(bench, share, value / ceiling)


def _speedup_vs_cpu(add: _Additions, results: ResultSet) -> None:
    """The vector add's whole step against the single-threaded CPU loop at the same K."""
    runs = list(results.family(VectorAdd))
    cpu = {rec.k: bench.median for bench, rec in runs if rec.scenario == "cpu_loop"}
    for bench, rec in runs:
        if rec.mode == "cpu":
            continue
        if rec.k in cpu:
            _ratio(add, bench, figures.SPEEDUP_VS_CPU, cpu[rec.k], bench.median)
        else:
            add.missing(bench, figures.SPEEDUP_VS_CPU, f"the CPU loop at K={rec.k} is not in this result set "
                                                       "(select test_cpu_loop too)")


def _swap_ratios(add: _Additions, results: ResultSet) -> None:
    """Swapped VGG16 over the normal one on the same device and pass: time and peak memory."""
    runs = list(results.family(VggSwap))
    normal = {(rec.device, rec.pass_): bench for bench, rec in runs if rec.variant == "normal"}
    for bench, rec in runs:
        if rec.variant == "normal":
            continue
        base = normal.get((rec.device, rec.pass_))
        if base is None:
            reason = f"the normal VGG16 ({rec.device}, {rec.pass_}) is not in this result set (select it too)"
            for spec in (figures.TIME_RATIO_VS_NORMAL, figures.MEMORY_RATIO_VS_NORMAL):
                add.missing(bench, spec, reason)
            continue
        _ratio(add, bench, figures.TIME_RATIO_VS_NORMAL, bench.median, base.median)
        mine, theirs = bench.value(figures.PEAK_ALLOCATED_MIB), base.value(figures.PEAK_ALLOCATED_MIB)
        if mine is None or theirs is None:
            add.missing(bench, figures.MEMORY_RATIO_VS_NORMAL,
                        "peak memory comes from PyTorch's CUDA allocator (CUDA only)")
        else:
            _ratio(add, bench, figures.MEMORY_RATIO_VS_NORMAL, mine, theirs)


def ideal_seconds(ppp: Ppp, peak_tflops: Callable[[str], float | None]) -> float | None:
    """The time a model's counted FLOPs would take at the peak of each layer's precision (None: a peak is
    unknown). PPP = this / the measured time."""
    total = 0.0
    for layer in ppp.layers:
        precision = ppp.precision_of(layer.type)
        if precision is None or not layer.flops:
            continue
        peak = peak_tflops(precision)
        if not peak:
            return None
        total += layer.flops / (peak * 1e12)
    return total


def _tta_variants(add: _Additions, results: ResultSet) -> None:
    """Each time-to-accuracy variant's images/s over the naive loop's for the same model, data and target
    (Problem 2.4: what a trick bought)."""
    runs = list(results.family(TimeToAccuracy))
    naive = {(rec.model, rec.data, rec.target): bench for bench, rec in runs if rec.variant == "naive"}
    for bench, rec in runs:
        if rec.variant == "naive":
            continue
        base = naive.get((rec.model, rec.data, rec.target))
        mine = bench.value(figures.IMAGES_PER_S)
        theirs = base.value(figures.IMAGES_PER_S) if base else None
        if mine is None or not theirs:
            add.missing(
                bench,
                figures.IMAGES_PER_S_VS_NAIVE,
                f"the naive loop of {rec.model} on the same data is not in this result set (select it too)",
            )
        else:
            add.record(bench, figures.IMAGES_PER_S_VS_NAIVE, mine / theirs)


def _ppp(add: _Additions, results: ResultSet, ceilings: Ceilings) -> None:
    """Platform percent of peak against the machine's measured ceilings and against the datasheet."""
    sheet = results.info.datasheet

    def measured(precision: str) -> float | None:
        return ceilings.value(datasheet.matmul_key(precision))

    def vendor(precision: str) -> float | None:
        return sheet.peak_tflops(precision) if sheet else None

    for bench, rec in results.family(Ppp):
        for spec, peak_of, missing in (
                (figures.SHARE_OF_PEAK, measured, ("no measured ceiling for a precision this model uses "
                                                   "(run benches/test_ceilings.py in the same run)")),
                (figures.SHARE_OF_DATASHEET, vendor, "no datasheet figure for a precision this model uses")):
            ideal = ideal_seconds(rec, peak_of)
            if ideal is None:
                add.missing(bench, spec, missing)
            else:
                _ratio(add, bench, spec, ideal, bench.median)


def _roofline(add: _Additions, results: ResultSet, ceilings: Ceilings) -> None:
    """``share_of_roof``: attained FLOP/s of the best-measured point over the roof at its intensity."""
    for bench, rec in results.family(Roofline):
        point = rec.points[-1]  # ncu's DRAM bytes where measured, else the analytic minimum
        peak, bandwidth = (
            ceilings.value(datasheet.matmul_key(point.precision)),
            ceilings.value(datasheet.COPY),
        )
        if peak is None or bandwidth is None:
            add.missing(bench, figures.SHARE_OF_ROOF,
                        "needs measured copy and matmul ceilings (run benches/test_ceilings.py)")
            continue
        if not bench.median:
            add.missing(bench, figures.SHARE_OF_ROOF, OVER_ZERO)
            continue
        attained = point.flops / bench.median / 1e12
        add.record(
            bench, figures.SHARE_OF_ROOF, place(point.intensity, attained, peak, bandwidth).share_of_roof
        )


def _scaling(add: _Additions, results: ResultSet) -> None:
    """Speedup and efficiency over the 1-GPU run of the same job; the course's subtraction estimate of
    communication and its bandwidth; DataParallel's throughput over DDP's on the same workload and GPUs.

    Throughput, not time, so weak scaling (batch per GPU fixed) and strong scaling (global batch fixed)
    share one definition: efficiency = speedup / GPUs.
    """
    runs = list(results.family(Scaling))
    one_gpu = {(rec.method, rec.reference_key): bench for bench, rec in runs if rec.gpus == 1}
    ddp = {(rec.workload, rec.gpus): bench for bench, rec in runs if rec.method == "DDP"}
    for bench, rec in runs:
        throughput = bench.value(figures.IMAGES_PER_S)
        base = one_gpu.get((rec.method, rec.reference_key))
        base_throughput = base.value(figures.IMAGES_PER_S) if base is not None else None
        apart = _measured_apart(bench, figures.IMAGES_PER_S.name, base) if base is not None else ""
        if rec.gpus > 1:
            if throughput is None or apart:
                for spec in SCALING_FIGURES:
                    add.missing(bench, spec, apart or "no images_per_s was measured")
            elif base_throughput:
                speedup = throughput / base_throughput
                add.record(bench, figures.SPEEDUP, speedup)
                add.record(bench, figures.SCALING_EFFICIENCY, speedup / rec.gpus)
            else:
                for spec in SCALING_FIGURES:
                    add.missing(
                        bench,
                        spec,
                        f"no 1-GPU {rec.method} run of {rec.reference_key} in this result set "
                        "(select it too)",
                    )
        if rec.method == "DDP" and rec.gpus > 1 and apart:
            for spec in COURSE_FIGURES:
                add.missing(bench, spec, apart)
        elif rec.method == "DDP" and rec.gpus > 1:
            _course_communication(add, bench, rec, base_throughput)
        if rec.method == "DataParallel":
            partner = ddp.get((rec.workload, rec.gpus))
            on_ddp = partner.value(figures.IMAGES_PER_S) if partner is not None else None
            vs_ddp = figures.THROUGHPUT_VS_DDP
            mixed = _measured_apart(bench, vs_ddp.name, partner, figures.IMAGES_PER_S.name) if partner else ""
            if mixed:
                add.missing(bench, vs_ddp, mixed)
            elif on_ddp and throughput is not None:
                add.record(bench, vs_ddp, throughput / on_ddp)
            else:
                add.missing(
                    bench,
                    vs_ddp,
                    f"no DDP run of {rec.workload} on {rec.gpus} GPUs in this result set",
                )


def _measured_apart(bench: BenchmarkEntry, figure: str, other: BenchmarkEntry, others: str = "") -> str:
    """Why a figure of ``bench`` computed from ``other``'s figure (``others``, the same name by default)
    cannot be: ``other``'s was measured by another method version than the one ``bench`` records for it (a
    baseline that re-saved one entry of the pair); "" where they match."""
    mine, theirs = bench.method(figure), other.method(others or figure)
    if mine == theirs:
        return ""
    return (f"{other.name} was measured by method {theirs}, this entry's {figure} by method {mine}: "
            "re-save both entries from runs of one code")


def _course_communication(
    add: _Additions, bench: BenchmarkEntry, rec: Scaling, base_throughput: float | None
) -> None:
    """The course's estimate: the n-GPU step minus the 1-GPU time for the same per-GPU batch, and the
    all-reduce bandwidth that time implies (2(n-1)/n of the parameters' bytes)."""
    if not base_throughput:
        for spec in COURSE_FIGURES:
            add.missing(bench, spec, f"no 1-GPU run of {rec.reference_key} in this result set")
        return
    subtraction_s = bench.median - rec.batch_per_gpu / base_throughput
    add.record(bench, figures.COMM_SUBTRACTION_MS, subtraction_s * 1e3)
    if rec.parameters is not None and subtraction_s > 0:
        course = comm.course_allreduce_bytes(rec.parameters, rec.gpus)
        add.record(bench, figures.COURSE_BANDWIDTH, course / subtraction_s / GB)
    else:
        add.missing(
            bench, figures.COURSE_BANDWIDTH, "the course's subtraction gave no positive communication time"
        )


def scaling_runs(results: ResultSet) -> list[tuple[BenchmarkEntry, Scaling]]:
    """The data-parallel runs of a result set, ordered for tables and plots."""
    return sorted(results.family(Scaling), key=lambda pair: (pair[1].method, pair[1].workload, pair[1].gpus))
