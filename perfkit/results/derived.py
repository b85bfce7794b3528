"""Figures that combine benchmarks, computed in one pure pass over a finished result set.

No benchmark hands a number to another while the run goes on: a bench records what it measured
and its family record (perfkit.results.payloads); this pass then adds every figure that needs a
partner (the speedup over the 1-GPU run of the same job, a swapped/normal ratio, the speedup over
the CPU loop, a share of this run's measured ceilings). So the figures do not depend on order,
``-k``, ``--lf`` or a parallel runner; where the partner is not in the result set, the figure is
absent with the reason. The plugin runs it from pytest-benchmark's ``pytest_benchmark_update_json``
hook, and ``perfkit compare`` / ``report`` run the same function on what they load, so a file
merged from several runs or cut short is judged the same way. Running it twice changes nothing.
"""
from __future__ import annotations

import typing
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from perfkit.results import comm, datasheet
from perfkit.results.metrics import MetricRecorder, metrics_of, value_of
from perfkit.results.payloads import (
    Ppp,
    RatePeak,
    Roofline,
    Scaling,
    TimeToAccuracy,
    VectorAdd,
    VggSwap,
    family,
    read,
)
from perfkit.results.roofline import place

Bench = MutableMapping[str, Any]
GB = 1e9
CEILING_KEYS: tuple[str, ...] = (datasheet.COPY, *(datasheet.matmul_key(p) for p in datasheet.PRECISIONS))


@dataclass(frozen=True)
class Ceiling:
    value: float
    source: str  # "measured in this run" or "stored baseline"


def measured_ceilings(results: Mapping[str, Any]) -> dict[str, float]:
    """Ceilings measured in this result set: a ceiling benchmark records a metric named by its key.

    A file that holds no ceiling benchmark (one family saved alone) keeps what its run stored.
    """
    found = {key: m.value for bench in results.get("benchmarks", [])
             for key, m in metrics_of(bench).items() if key in CEILING_KEYS}
    stored = (results.get("machine_info") or {}).get("perfkit", {}).get("ceilings") or {}
    return {**{k: float(v) for k, v in stored.items()}, **found}


def ceilings_of(results: Mapping[str, Any], fallback: Mapping[str, float] | None = None) -> dict[str, Ceiling]:
    """This result set's ceilings, else the fallback's (the stored baseline of this hardware)."""
    out = {k: Ceiling(float(v), "stored baseline") for k, v in (fallback or {}).items()}
    out.update({k: Ceiling(v, "measured in this run") for k, v in measured_ceilings(results).items()})
    return out


def derive(results: MutableMapping[str, Any],
           fallback_ceilings: Mapping[str, float] | None = None) -> MutableMapping[str, Any]:
    """Add every cross-benchmark figure to ``results`` (in place; idempotent) and return it.

    ``fallback_ceilings`` (the stored baseline's) stand in for ceilings this run did not measure; they are
    kept in ``machine_info["perfkit"]["baseline_ceilings"]`` so the file derives the same way on its own later.
    """
    info = (results.get("machine_info") or {}).get("perfkit")
    if isinstance(info, dict):
        if fallback_ceilings is None:
            fallback_ceilings = info.get("baseline_ceilings") or {}
        elif fallback_ceilings:
            info["baseline_ceilings"] = dict(fallback_ceilings)
        info["ceilings"] = measured_ceilings(results)
    ceilings = ceilings_of(results, fallback_ceilings)
    spec = datasheet.by_key(((info or {}).get("fingerprint") or {}).get("datasheet_key") or "")
    for bench in results.get("benchmarks", []):
        _share_of_ceiling(bench, ceilings)
    _speedup_vs_cpu(results)
    _swap_ratios(results)
    _ppp(results, ceilings, spec)
    _roofline(results, ceilings)
    _scaling(results)
    _tta_variants(results)
    return results


def _median(bench: Mapping[str, Any]) -> float:
    return float(bench["stats"]["median"])


def _recorder(bench: Mapping[str, Any]) -> MetricRecorder:
    """Records into a benchmark entry of the result set being derived (a JSON dict, so mutable)."""
    return MetricRecorder(typing.cast(Bench, bench).setdefault("extra_info", {}))


def _share_of_ceiling(bench: Mapping[str, Any], ceilings: Mapping[str, Ceiling]) -> None:
    """``share_of_peak`` (TFLOP/s) or ``share_of_copy_peak`` (GB/s): the rate over the ceiling it names."""
    peak = read(bench, RatePeak)
    if peak is None:
        return
    copy = peak.key == datasheet.COPY
    rate, share = ("bandwidth_gbps", "share_of_copy_peak") if copy else ("tflops", "share_of_peak")
    value = value_of(bench, rate)
    record, ceiling = _recorder(bench), ceilings.get(peak.key)
    if value is None:
        record.absent(share, f"no {rate} was measured to share")
        return
    if ceiling is None:
        record.absent(share, f"no measured {peak.key}: run benches/test_ceilings.py in the same run")
        return
    record.record(share, value / ceiling.value, "ratio", "higher")
    record.info("ceiling_used", {"key": peak.key, "value": ceiling.value, "source": ceiling.source})


def _speedup_vs_cpu(results: Mapping[str, Any]) -> None:
    """The vector add's whole step against the single-threaded CPU loop at the same K."""
    runs = list(family(results, VectorAdd))
    cpu = {rec.k: _median(bench) for bench, rec in runs if rec.scenario == "cpu_loop"}
    for bench, rec in runs:
        if rec.mode == "cpu":
            continue
        if rec.k in cpu:
            _recorder(bench).record("speedup_vs_cpu", cpu[rec.k] / _median(bench), "x", "higher")
        else:
            _recorder(bench).absent("speedup_vs_cpu", f"the CPU loop at K={rec.k} is not in this result set "
                                                      "(select test_cpu_loop too)")


def _swap_ratios(results: Mapping[str, Any]) -> None:
    """Swapped VGG16 over the normal one on the same device and pass: time and peak memory."""
    runs = list(family(results, VggSwap))
    normal = {(rec.device, rec.pass_): bench for bench, rec in runs if rec.variant == "normal"}
    for bench, rec in runs:
        if rec.variant == "normal":
            continue
        record, base = _recorder(bench), normal.get((rec.device, rec.pass_))
        if base is None:
            reason = f"the normal VGG16 ({rec.device}, {rec.pass_}) is not in this result set (select it too)"
            for name in ("time_ratio_vs_normal", "memory_ratio_vs_normal"):
                record.absent(name, reason)
            continue
        record.record("time_ratio_vs_normal", _median(bench) / _median(base), "ratio", "lower")
        mine, theirs = value_of(bench, "peak_allocated_mib"), value_of(base, "peak_allocated_mib")
        if mine is None or theirs is None:
            record.absent("memory_ratio_vs_normal", "peak memory comes from PyTorch's CUDA allocator (CUDA only)")
        else:
            record.record("memory_ratio_vs_normal", mine / theirs, "ratio", "lower")


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


def _tta_variants(results: Mapping[str, Any]) -> None:
    """Each time-to-accuracy variant's images/s over the naive loop's for the same model, data and target
    (Problem 2.4: what a trick bought)."""
    runs = list(family(results, TimeToAccuracy))
    naive = {(rec.model, rec.data, rec.target): bench for bench, rec in runs if rec.variant == "naive"}
    for bench, rec in runs:
        if rec.variant == "naive":
            continue
        base = naive.get((rec.model, rec.data, rec.target))
        mine, theirs = value_of(bench, "images_per_s"), value_of(base, "images_per_s") if base else None
        if mine is None or not theirs:
            _recorder(bench).absent("images_per_s_vs_naive", f"the naive loop of {rec.model} on the same data is not "
                                                            "in this result set (select it too)")
        else:
            _recorder(bench).record("images_per_s_vs_naive", mine / theirs, "x", "higher")


def _ppp(results: Mapping[str, Any], ceilings: Mapping[str, Ceiling], spec: datasheet.GpuSpec | None) -> None:
    """Platform percent of peak against this run's measured ceilings and against the datasheet."""
    def measured(precision: str) -> float | None:
        found = ceilings.get(datasheet.matmul_key(precision))
        return found.value if found else None

    def sheet(precision: str) -> float | None:
        return spec.peak_tflops(precision) if spec else None

    for bench, rec in family(results, Ppp):
        record = _recorder(bench)
        for name, peak_of, missing in (
                ("share_of_peak", measured, ("no measured ceiling for a precision this model uses "
                                           "(run benches/test_ceilings.py in the same run)")),
                ("share_of_datasheet", sheet, "no datasheet figure for a precision this model uses")):
            ideal = ideal_seconds(rec, peak_of)
            if ideal is None:
                record.absent(name, missing)
            else:
                record.record(name, ideal / _median(bench), "ratio", "higher")


def _roofline(results: Mapping[str, Any], ceilings: Mapping[str, Ceiling]) -> None:
    """``of_roof``: attained FLOP/s of the best-measured point over the roof at its intensity."""
    for bench, rec in family(results, Roofline):
        point = rec.points[-1]  # ncu's DRAM bytes where measured, else the analytic minimum
        peak, bandwidth = ceilings.get(datasheet.matmul_key(point.precision)), ceilings.get(datasheet.COPY)
        record = _recorder(bench)
        if peak is None or bandwidth is None:
            record.absent("of_roof", "needs measured copy and matmul ceilings (run benches/test_ceilings.py)")
            continue
        attained = point.flops / _median(bench) / 1e12
        record.record("of_roof", place(point.intensity, attained, peak.value, bandwidth.value).of_roof,
                      "ratio", "higher")


SCALING_FIGURES = ("speedup", "scaling_efficiency")


def _scaling(results: Mapping[str, Any]) -> None:
    """Speedup and efficiency over the 1-GPU run of the same job; the course's subtraction estimate of
    communication and its bandwidth; DataParallel's throughput over DDP's on the same workload and GPUs.

    Throughput, not time, so weak scaling (batch per GPU fixed) and strong scaling (global batch fixed)
    share one definition: efficiency = speedup / GPUs.
    """
    runs = list(family(results, Scaling))
    one_gpu = {(rec.method, rec.reference_key): bench for bench, rec in runs if rec.gpus == 1}
    ddp = {(rec.workload, rec.gpus): bench for bench, rec in runs if rec.method == "DDP"}
    for bench, rec in runs:
        record, throughput = _recorder(bench), value_of(bench, "images_per_s")
        base = one_gpu.get((rec.method, rec.reference_key))
        base_throughput = value_of(base, "images_per_s") if base is not None else None
        if rec.gpus > 1:
            if throughput is None:
                for name in SCALING_FIGURES:
                    record.absent(name, "no images_per_s was measured")
            elif base_throughput:
                speedup = throughput / base_throughput
                record.record("speedup", speedup, "x", "higher")
                record.record("scaling_efficiency", speedup / rec.gpus, "ratio", "higher")
            else:
                for name in SCALING_FIGURES:
                    record.absent(name, f"no 1-GPU {rec.method} run of {rec.reference_key} in this result set "
                                        "(select it too)")
        if rec.method == "DDP" and rec.gpus > 1:
            _course_communication(record, rec, _median(bench), base_throughput)
        if rec.method == "DataParallel":
            partner = ddp.get((rec.workload, rec.gpus))
            on_ddp = value_of(partner, "images_per_s") if partner is not None else None
            if on_ddp and throughput is not None:
                record.record("throughput_vs_ddp", throughput / on_ddp, "ratio", "higher")
            else:
                record.absent("throughput_vs_ddp", f"no DDP run of {rec.workload} on {rec.gpus} GPUs in this "
                                                   "result set")


def _course_communication(record: MetricRecorder, rec: Scaling, step_s: float, base_throughput: float | None) -> None:
    """The course's estimate: the n-GPU step minus the 1-GPU time for the same per-GPU batch, and the
    all-reduce bandwidth that time implies (2(n-1)/n of the parameters' bytes)."""
    if not base_throughput:
        for name in ("comm_subtraction_ms", "course_bandwidth_gbps"):
            record.absent(name, f"no 1-GPU run of {rec.reference_key} in this result set")
        return
    subtraction_s = step_s - rec.batch_per_gpu / base_throughput
    record.record("comm_subtraction_ms", subtraction_s * 1e3, "ms", "lower")
    if rec.parameters is not None and subtraction_s > 0:
        course = comm.course_allreduce_bytes(rec.parameters, rec.gpus)
        record.record("course_bandwidth_gbps", course / subtraction_s / GB, "GB/s", "higher")
    else:
        record.absent("course_bandwidth_gbps", "the course's subtraction gave no positive communication time")


def scaling_runs(results: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], Scaling]]:
    """The data-parallel runs of a result set, ordered for tables and plots."""
    return sorted(family(results, Scaling), key=lambda pair: (pair[1].method, pair[1].workload, pair[1].gpus))

