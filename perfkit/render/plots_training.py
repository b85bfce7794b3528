"""Training drawn: epoch time and throughput against the batch size, how many layers of the course's stack
fit, time to accuracy with the GPU's utilisation, and large-batch accuracy per epoch (each a family's
plotter: perfkit.render.families)."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from perfkit.render.family_tables import capacity_label
from perfkit.render.plotting import plain_log_ticks, pyplot, save_figure
from perfkit.render.trend_display import axis_scale
from perfkit.resultfile import seeds
from perfkit.resultfile.model import ResultSet
from perfkit.resultfile.payloads import (
    LARGE_BATCH_CLASSES,
    BatchCapacity,
    BatchEpoch,
    LargeBatch,
    LayerCapacity,
    TimeToAccuracy,
    TtaRun,
)


def plot_batch_sweep(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """Epoch time and images/s vs batch size (log x), one line per way of feeding the data, with the largest
    batch that fits marked (under the memory its search had) and seed 003's V100 beside them as images/s at
    the batches this run measured: its epochs held 50,000 images, a quick run's a few hundred."""
    epochs = sorted((rec for _, rec in results.family(BatchEpoch)), key=lambda r: r.batch)
    if not epochs:
        return []
    plt = pyplot()
    # the legend below both panels: inside either it hid a point (the seed's V100 at batch 32)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8), layout="constrained")
    for variant in sorted({r.variant for r in epochs}):
        rows = [r for r in epochs if r.variant == variant]
        left.plot([r.batch for r in rows], [r.epoch_s for r in rows], marker="o", label=variant)
        right.plot([r.batch for r in rows], [r.images_per_s for r in rows], marker="o", label=variant)
    measured = {r.batch for r in epochs}
    seed = {b: seeds.SEED_003_IMAGES / s for b, s in seeds.BATCH_EPOCH_V100.items() if b in measured}
    if seed:
        right.scatter(list(seed), list(seed.values()), marker="x", color="grey",
                      label=f"seed 003 V100, {seeds.SEED_003_IMAGES:,}-image epochs")
    for _, cap in results.family(BatchCapacity):
        for ax in (left, right):
            ax.axvline(cap.largest, color="r", linestyle="--", label=capacity_label(cap, measured))
    left.set(xscale="log", yscale=axis_scale([r.epoch_s for r in epochs]), xlabel="batch size",
             ylabel="epoch time (s)", title=f"one epoch of {epochs[0].dataset:,} images")
    right.set(xscale="log", yscale=axis_scale([r.images_per_s for r in epochs] + list(seed.values())),
              xlabel="batch size", ylabel="images/s", title="throughput")
    plain_log_ticks(left.xaxis, right.xaxis, left.yaxis, right.yaxis)
    for ax in (left, right):
        ax.set_xticks(sorted(measured))  # every batch measured, labelled
    shown: dict[str, Any] = {}  # each label once: both panels draw the variants and the largest batch
    for ax in (left, right):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            shown.setdefault(label, handle)
    fig.legend(list(shown.values()), list(shown), fontsize=7, loc="outside lower center", ncol=2)
    fig.suptitle(f"{epochs[0].model} on {epochs[0].dataset} images, {results.hardware_id}")
    return [("Epoch time vs batch size", save_figure(fig, out / "batch_sweep.png"))]


def plot_layer_capacity(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """How many layers of the course's stack fit, per search and cap, with the seed's GTX 1080 Ti answer where
    a search was capped to a GPU memory (a CPU's synthetic budgets of a few MiB are no card's); and for the
    two-GPU split, each device's peak memory."""
    records = [rec for _, rec in results.family(LayerCapacity)]
    if not records:
        return []
    plt = pyplot()
    split = [r for r in records if r.knob == "split"]
    fig, axes = plt.subplots(1, 2 if split else 1, figsize=(11 if split else 6.5, 4.2), squeeze=False)
    ax = axes[0][0]
    labels = [f"{r.knob}\n{r.memory}" for r in records]
    ax.bar(labels, [r.num_conv for r in records], label="conv layers")
    ax.bar(labels, [r.num_fc for r in records], bottom=[r.num_conv for r in records], label="fc layers")
    if any(r.cap_gib for r in records):  # a GPU held to the seed card's memory; not a synthetic budget
        fitted = max((c + f for (c, f), ms in seeds.LAYER_STACK_1080TI.items() if ms is not None), default=0)
        ax.axhline(fitted, color="grey", linestyle="--", label=f"seed 000 GTX 1080 Ti: {fitted} layers")
    ax.set(ylabel="layers that fit", title="largest stack before out-of-memory")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.3)  # room above the bars for the legend
    ax.tick_params(axis="x", labelsize=7, labelrotation=30)
    ax.legend(fontsize=7)
    if split:
        right = axes[0][1]
        for i, rec in enumerate(split):
            gpus = [f"GPU {g}" for g in range(len(rec.peak_mib_per_device))]
            right.bar(
                [f"{g}\n{f'{rec.cap_gib:.2f} GiB' if rec.cap_gib else 'whole'}" for g in gpus],
                [m / 1024 for m in rec.peak_mib_per_device],
                label=f"split at layer {rec.split_at} of "
                f"{rec.num_conv + rec.num_fc}"
                + (f"; GPU {rec.failed_gpu} ran out first" if rec.failed_gpu is not None else ""),
            )
            if rec.cap_gib:
                right.axhline(rec.cap_gib, color=f"C{i}", linestyle=":")
        right.set(
            ylabel="peak allocated (GiB)", title="two-GPU split: memory per device at the largest stack"
        )
        right.legend(fontsize=7)
    return [("Layer-stack capacity", save_figure(fig, out / "layer_capacity.png"))]


def plot_time_to_accuracy(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """Validation accuracy per epoch of every run against its target, and the GPU and memory utilisation
    over the runs (a 1 s moving average; the mean in the legend)."""
    records = [rec for _, rec in results.family(TimeToAccuracy)]
    if not records:
        return []
    plt = pyplot()
    traced = [r for r in records if r.gpu_util_pct]
    fig, axes = plt.subplots(1, 2 if traced else 1, figsize=(12 if traced else 6.5, 5.2 if traced else 4.2),
                             squeeze=False)
    left = axes[0][0]
    estimated = False
    for i, rec in enumerate(records):
        for j, run in enumerate(rec.runs):
            seconds, guessed = _evaluated_at(run)
            estimated |= guessed
            left.plot(seconds, run.accuracies, ":" if guessed else "-", marker=".", color=f"C{i}", alpha=0.6,
                      label=f"{rec.model} {rec.variant} (batch {rec.batch})" if j == 0 else None)
    for target in sorted({r.target for r in records}):
        left.axhline(target, color="grey", linestyle="--", label=f"target {target:.0%}")
    # the time to accuracy is where a run crosses its target: training seconds on x, as the title says
    left.set(xlabel="training time (s), one point per epoch" + (
                 "\n(dotted: a run that kept only its whole training time, its epochs spread evenly over it)"
                 if estimated else ""),
             ylabel="validation accuracy", title="every run to its target")
    left.legend(fontsize=7)
    if traced:
        right = axes[0][1]
        for i, rec in enumerate(traced):
            window = max(1, round(len(rec.util_t) / max(rec.util_t[-1], 1e-9)))  # samples per second
            for series, style, name in ((rec.gpu_util_pct, "-", "GPU"), (rec.memory_util_pct, ":", "memory")):
                smooth = [
                    sum(series[max(0, k - window + 1) : k + 1]) / len(series[max(0, k - window + 1) : k + 1])
                    for k in range(len(series))
                ]
                right.plot(rec.util_t, smooth, style, color=f"C{records.index(rec)}",
                           label=f"{rec.variant} {name} (mean {sum(series) / len(series):.0f}%)")
        right.set(
            xlabel="seconds", ylabel="utilisation (%)", ylim=(0, 105), title="NVML utilisation while training"
        )
        right.legend(
            fontsize=6, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.17)
        )  # below: the lines stay visible
    fig.suptitle(f"Time to accuracy on {results.hardware_id}")
    heading = "Time to accuracy and GPU utilisation" if traced else "Time to accuracy"
    return [(heading, save_figure(fig, out / "time_to_accuracy.png"))]


def _evaluated_at(run: TtaRun) -> tuple[list[float], bool]:
    """The training seconds at each of a run's evaluations, and whether they are estimated: files before
    2026-11-23 kept only the whole training time, spread here evenly over the epochs."""
    if len(run.trained_s) == len(run.accuracies):
        return list(run.trained_s), False
    epochs = len(run.accuracies)
    return [run.train_s * (k + 1) / epochs for k in range(epochs)], True


def plot_large_batch(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """Train accuracy per epoch of each large-batch run (seed 003 Q4), with guessing's level: whether the
    large batch caught up, and whether a scaled learning rate trained at all."""
    runs = [run for _, run in results.family(LargeBatch) if run.history]
    if not runs:
        return []
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 5.4), layout="constrained")
    for i, run in enumerate(runs):
        label = f"{run.world} GPU(s), batch {run.global_batch}, {run.rule}, lr {run.lr:g}"
        if run.warmup_steps:
            label += f", {run.warmup_steps} warm-up steps"
        # runs stuck at chance lie on top of each other: markers and dashes keep each visible
        ax.plot([e.epoch + 1 for e in run.history], [e.train_accuracy for e in run.history],
                marker="osD^v"[i % 5], linestyle=("-", "--", ":", "-.")[i % 4], label=label)
    epochs = range(1, max(len(run.history) for run in runs) + 1)
    ax.axhline(1 / LARGE_BATCH_CLASSES, color="grey", linestyle="--",
               label=f"chance ({LARGE_BATCH_CLASSES} classes)")
    ax.set(xlabel="epoch", ylabel="train accuracy", ylim=(0, 1), xticks=epochs,
           title=f"Large batch on {runs[0].data} ({results.hardware_id})")
    fig.legend(fontsize=7, loc="outside lower center")  # below the axes: the lines stay clear
    return [("Large-batch training: accuracy per epoch", save_figure(fig, out / "large_batch.png"))]
