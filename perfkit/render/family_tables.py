"""Each family's own tables, below its benchmarks' table in the run report: the ceilings, platform percent of
peak, data-parallel scaling, large-batch training, the layer stack's capacity, epoch time against the batch
size and time to accuracy (perfkit.render.families lists whose is whose)."""
from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from perfkit.render.document import Section, Table, Text
from perfkit.render.tables import fmt_time
from perfkit.resultfile import figures, seeds
from perfkit.resultfile.ceilings import Ceilings
from perfkit.resultfile.derived import scaling_runs
from perfkit.resultfile.figures import TIME
from perfkit.resultfile.metrics import MetricSpec
from perfkit.resultfile.model import BenchmarkEntry, ResultSet
from perfkit.resultfile.payloads import (
    LARGE_BATCH_CLASSES,
    BatchCapacity,
    BatchEpoch,
    LargeBatch,
    LayerCapacity,
    Ppp,
    TimeToAccuracy,
)


def _cell(bench: BenchmarkEntry, spec: MetricSpec, fmt: str = "{:.3g}") -> str:
    """A metric as a table cell: times in their unit, other figures in ``fmt``; "-" where it is absent."""
    metric = bench.metrics.get(spec.name)
    return (
        "-"
        if metric is None
        else (fmt_time(metric.value) if metric.unit == "s" else fmt.format(metric.value))
    )


def ppp_section(results: ResultSet, ceilings: Ceilings, top: int = 8) -> list[Section]:
    """Platform percent of peak per model and batch, then each model's slowest layers."""
    runs = list(results.family(Ppp))
    if not runs:
        return []
    summary = [[p.model, str(p.batch), fmt_time(b.median), _cell(b, figures.TFLOPS),
                _cell(b, figures.SHARE_OF_PEAK, "{:.1%}"), _cell(b, figures.PREDICTED_S),
                _cell(b, figures.SUM_OF_LAYERS_S), _cell(b, figures.LAUNCH_OVERHEAD_S),
                _cell(b, figures.CONV_FLOP_SHARE, "{:.2%}")] for b, p in runs]
    first = runs[0][1]
    out = [
        Section(
            "Platform percent of peak (forward)",
            (
                Text(
                    f"Convolutions run {first.precision}, linear layers {first.linear_precision}; PPP = "
                    f"time at the measured "
                    "peaks of that math / measured time. PALEO prediction at the datasheet peak (PPP 1). "
                    f"{first.convention}."
                ),
                Table.of(
                    [
                        "model",
                        "batch",
                        "measured",
                        "TFLOP/s",
                        "PPP",
                        "PALEO predicted",
                        "sum of layers",
                        "launch overhead",
                        "conv share",
                    ],
                    summary,
                ),
            ),
        )
    ]
    for _, p in runs:
        rows = []
        for layer in sorted(p.layers, key=lambda r: -r.seconds)[:top]:
            tflops = layer.flops / layer.seconds / 1e12
            precision = p.precision_of(layer.type)
            peak = (
                ceilings.value(figures.matmul_ceiling(precision).name) if precision and layer.flops else None
            )
            rows.append([layer.name, layer.type, fmt_time(layer.seconds), f"{tflops:.3g}",
                         "-" if peak is None else f"{tflops / peak:.1%}", fmt_time(layer.predicted_s)])
        out.append(Section(f"{p.model} batch {p.batch}: the {top} slowest layers", (
            Table.of(["layer", "type", "time", "TFLOP/s", "PPP", "PALEO predicted"], rows),), level=3))
    return out


#: Where a file's runs of a figure spread more than this around their median, a table shows their median and
#: range instead of the newest run's value.
SPREAD_SHOWN = 0.10


def _over_runs(values: Sequence[float], newest: str, fmt: Callable[[float], str]) -> str:
    """``newest`` (the one run's cell) for one run; over several, their median, and its range "(min to max)"
    where they spread more than SPREAD_SHOWN: one run's value of a figure that moved more than 30x between
    runs of one job (the NCCL kernel time waits for the slowest rank) reads as a property of the job."""
    if len(values) < 2:
        return newest
    middle, low, high = statistics.median(values), min(values), max(values)
    if high - low <= SPREAD_SHOWN * abs(middle):
        return fmt(middle)
    return f"{fmt(middle)} ({fmt(low)} to {fmt(high)})"


def scaling_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
    """DDP and DataParallel per workload and GPU count, with the three communication figures side by side;
    over a baseline's runs where they disagree."""
    runs = scaling_runs(results)
    if not runs:
        return []
    kept = results.runs()

    def cell(bench: BenchmarkEntry, spec: MetricSpec, fmt: str = "{:.3g}") -> str:
        return _over_runs(kept[bench.fullname].get(spec.name, ()), _cell(bench, spec, fmt), fmt.format)

    rows = [
        [
            r.method,
            r.workload,
            str(r.gpus),
            _over_runs(kept[b.fullname].get(TIME, ()), fmt_time(b.median), fmt_time),
            cell(b, figures.IMAGES_PER_S, "{:,.0f}"),
            cell(b, figures.SPEEDUP, "{:.2f}"),
            cell(b, figures.SCALING_EFFICIENCY, "{:.1%}"),
            cell(b, figures.COMPUTE_MS),
            cell(b, figures.COMM_EXPOSED_MS),
            cell(b, figures.NCCL_KERNEL_MS),
            cell(b, figures.NCCL_EXPOSED_MS),
            cell(b, figures.COMM_SUBTRACTION_MS),
            cell(b, figures.BUSBW_RATIO, "{:.2f}"),
            cell(b, figures.PEAK_ALLOCATED_MIB, "{:,.0f}"),
        ]
        for b, r in runs
    ]
    head = ["method", "workload", "GPUs", "step", "images/s", "speedup", "efficiency", "compute ms (no_sync)",
            "exposed comm ms (step - no_sync)", "NCCL kernel ms", "NCCL exposed ms", "course subtraction ms",
            "DDP busbw / raw", "peak MiB per GPU"]
    return [
        Section(
            "Data-parallel scaling",
            (
                Text(
                    "Speedup = images/s over the 1-GPU run of the same job in the same results; efficiency "
                    "= speedup / GPUs. Communication three ways: the step minus the same step under "
                    "`no_sync`; torch.profiler's NCCL kernel time per step and the part no compute kernel "
                    "overlapped; the course's subtraction (n-GPU step minus the 1-GPU time for the same "
                    "per-GPU batch). Where the results hold several runs "
                    "(a baseline), each cell is the median of its runs, with their range (min to max) where "
                    f"they spread more than {SPREAD_SHOWN:.0%}: the NCCL kernel time includes waiting for "
                    "the slowest rank and moved more than 30x between runs of one job on four H100s. Each "
                    "figure's median is its own, so a row's figures need not add up."
                ),
                Table.of(head, rows),
            ),
        )
    ]


def large_batch_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
    """Seed 003 Q4: each run's accuracy per epoch and its mean over the epochs (beside the seed's figure where
    the run repeats its GPUs, batch, rate and epochs); a run that ended near chance says so, since its loss
    alone does not tell a reader."""
    runs = list(results.family(LargeBatch))
    if not runs:
        return []
    rows = []
    for bench, run in runs:
        accuracies = [e.train_accuracy for e in run.history]
        quoted = (
            seeds.LARGE_BATCH_V100.get((run.world, run.global_batch))
            if run.rule == "same" and len(accuracies) == seeds.LARGE_BATCH_V100_EPOCHS
            else None
        )
        at_chance = bool(accuracies) and accuracies[-1] < 1.5 / LARGE_BATCH_CLASSES
        rows.append([
            str(run.world), str(run.global_batch), run.rule, f"{run.lr:g}", str(run.warmup_steps),
            (" ".join(f"{a:.0%}" for a in accuracies) + (" (chance)" if at_chance else "")) or "-",
            (f"{statistics.fmean(accuracies):.1%}" if accuracies else "-")
            + (f" ({quoted[1]:.1%})" if quoted else ""),
            f"{run.history[-1].train_loss:.4g}" if run.history else "-",
            _cell(bench, figures.TEST_ACCURACY, "{:.1%}"),
            _cell(bench, figures.TRAIN_S),
        ])
    seed = ", ".join(f"batch {batch} on {gpus} GPU(s): {accuracy:.1%} (loss {loss:g})"
                     for (gpus, batch), (loss, accuracy) in seeds.LARGE_BATCH_V100.items())
    return [
        Section(
            "Large-batch training (same epochs)",
            (
                Text(
                    f"Data: `{runs[0][1].data}`; ResNet-18. Seed 003 Q4.1 (V100s, CIFAR-10, "
                    f"{seeds.LARGE_BATCH_V100_EPOCHS} epochs, the same learning rate), its 'Avg Train "
                    f"Accuracy': {seed}; in brackets beside a run of ours with the same GPUs, batch, rate "
                    "and epochs. Its Q4.2 answer is to scale the learning rate with the batch (the "
                    "linear-warmup rows). A run marked (chance) ended within 1.5x of guessing "
                    f"({1 / LARGE_BATCH_CLASSES:.0%} for {LARGE_BATCH_CLASSES} classes): it did not learn."
                ),
                Table.of(
                    [
                        "GPUs",
                        "global batch",
                        "rule",
                        "lr",
                        "warm-up steps",
                        "train accuracy by epoch",
                        "mean train accuracy (seed 003)",
                        "final train loss",
                        "test accuracy",
                        "train time",
                    ],
                    rows,
                ),
            ),
        )
    ]


def capacity_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
    found = list(results.family(LayerCapacity))
    if not found:
        return []
    rows = [[rec.knob, rec.memory, str(rec.num_conv), str(rec.num_fc), rec.stopped_by, str(len(rec.probes)),
             _cell(bench, figures.FORWARD_MEAN_MS), "-" if rec.split_at is None else _split_cell(bench, rec)]
            for bench, rec in found]
    seed = ", ".join(f"{c} conv + {f} fc: " + (f"{ms} ms" if ms else "out of memory")
                     for (c, f), ms in seeds.LAYER_STACK_1080TI.items())
    split = ", ".join(
        f"{gpu} {c} conv + {f} fc ({ms} ms)" for gpu, (c, f, ms) in seeds.LAYER_SPLIT_1080TI.items()
    )
    return [
        Section(
            "Layer-stack capacity (seed 000 Task 1)",
            (
                Text(
                    f"Input {list(found[0][1].input_shape)}; each layer keeps "
                    f"{found[0][1].kept_mib_per_layer:.3g} MiB for backward. Seed 000 on a GTX 1080 Ti "
                    f"(10.91 GiB): {seed}; split across two: {split} (GPU1 ran out first)."
                ),
                Table.of(
                    ["search", "memory", "conv", "fc", "stopped by", "probes", "forward mean (ms)", "split"],
                    rows,
                ),
            ),
        )
    ]


def _split_cell(bench: BenchmarkEntry, rec: LayerCapacity) -> str:
    """Where the two-GPU stack splits, each device's peak, and the forward by part (GPU 0, the copy, GPU
    1)."""
    peaks = " / ".join(f"{m / 1024:.2f}" for m in rec.peak_mib_per_device)
    parts = " + ".join(_cell(bench, spec) for spec in (figures.GPU0_FORWARD_MS, figures.TRANSFER_MS,
                                                       figures.GPU1_FORWARD_MS))
    return f"layer {rec.split_at}; peaks {peaks} GiB; GPU 0 + copy + GPU 1: {parts} ms"


def capacity_label(cap: BatchCapacity, measured: set[int]) -> str:
    """The largest batch the capacity search fit, and the memory it had (the report's table and the sweep's
    plot say the same). Where the sweep ran a larger batch (a CPU's search has a synthetic budget, the sweep's
    epochs the host's memory) "out of memory above" would contradict the epochs beside it: it says that the
    sweep had more memory instead ("largest batch that fits: 11 (out of memory)" sat above batches 32 and 128
    that ran)."""
    room = cap.room or (f"{cap.cap_gib:.2f} GiB per GPU (capped)" if cap.cap_gib else "")
    under = f" under {room}" if room else ""
    above = sorted(b for b in measured if b > cap.largest)
    if above:
        return (f"largest batch the capacity search fit{under}: {cap.largest} (the sweep's epochs had more "
                f"memory: batch {above[-1]} ran)")
    beyond = " (out of memory above)" if cap.stopped_by == "out of memory" else " (the whole dataset)"
    within = under or " its search's memory"
    return f"largest batch that fits{within}: {cap.largest}{beyond}"


def batch_sweep_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
    epochs = sorted(results.family(BatchEpoch), key=lambda item: (item[1].variant, item[1].batch))
    if not epochs:
        return []
    rows = [[rec.variant, str(rec.batch), f"{rec.epoch_s:.3g} s", f"{rec.images_per_s:,.0f}",
             "-" if rec.peak_mib is None else f"{rec.peak_mib:,.0f} MiB",
             f"{seeds.BATCH_EPOCH_V100[rec.batch]} s" if rec.batch in seeds.BATCH_EPOCH_V100 else "-"]
            for _, rec in epochs]
    swept = {rec.batch for _, rec in epochs}
    largest = [capacity_label(cap, swept) for _, cap in results.family(BatchCapacity)]
    return [
        Section(
            "Epoch time vs batch size (seeds 003 Q1, 004 2.1)",
            (
                Text(
                    f"{epochs[0][1].model} on `{epochs[0][1].data}`; "
                    + ("; ".join(largest) or "largest batch not searched")
                    + f". Seed 003's V100 ran out of memory at {seeds.BATCH_OOM_V100}."
                ),
                Table.of(["variant", "batch", "epoch", "images/s", "peak", "seed 003 V100 epoch"], rows),
            ),
        )
    ]


def tta_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
    found = list(results.family(TimeToAccuracy))
    if not found:
        return []
    rows = []
    for bench, rec in found:
        reached = [r.tta_s for r in rec.runs if r.reached and r.tta_s is not None]
        median = f"{statistics.median(reached):.3g} s" if reached else "-"
        sd = bench.value(figures.SHIFTED_ACCURACY_SD)
        rows.append(
            [
                rec.model,
                rec.variant,
                str(rec.batch),
                f"{len(reached)}/{len(rec.runs)}",
                median,
                _cell(bench, figures.TTA_COV, "{:.1%}"),
                _cell(bench, figures.EPOCHS_TO_TARGET, "{:.3g}"),
                _cell(bench, figures.IMAGES_PER_S, "{:,.0f}"),
                _cell(bench, figures.IMAGES_PER_S_VS_NAIVE, "{:.2f}x"),
                _cell(bench, figures.GPU_UTIL_PCT, "{:.0f}%"),
                _cell(bench, figures.SHIFTED_ACCURACY, "{:.1%}") + (f" ± {sd:.1%}" if sd is not None else ""),
            ]
        )
    first = found[0][1]
    return [
        Section(
            "Time to accuracy (seed 002 Problem 2)",
            (
                Text(
                    f"Data `{first.data}`, target {first.target:.0%}, at most {first.epoch_cap} epochs; "
                    f"shifted set `{first.shifted_data or 'none'}`. TTA: first step to the end of the "
                    "evaluation that reached the target."
                ),
                Table.of(
                    [
                        "model",
                        "variant",
                        "batch",
                        "reached",
                        "TTA median",
                        "CoV",
                        "epochs",
                        "images/s",
                        "vs naive",
                        "GPU util",
                        "shifted accuracy",
                    ],
                    rows,
                ),
            ),
        )
    ]


def ceilings_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
    if not len(ceilings):
        return []
    rows = []
    for key in ceilings:
        found = ceilings.found[key]
        rows.append(
            [
                key,
                f"{found.value:.4g}",
                found.describe(),
                "-" if found.datasheet is None else f"{found.datasheet:.4g}",
                "-" if not found.datasheet else f"{found.value / found.datasheet:.1%}",
            ]
        )
    spec = results.info.datasheet
    source = f"Datasheet: {spec.source}." if spec else "No datasheet entry for this machine."
    return [
        Section(
            "Ceilings",
            (
                Table.of(["ceiling", "measured", "from", "datasheet", "share of datasheet"], rows),
                Text(source),
            ),
        )
    ]
