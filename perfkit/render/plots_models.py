"""Single layers and whole models drawn: per-layer memory and power, the VGG16 ReLU/MaxPool swap, the
training-step memory estimate, the roofline and platform percent of peak (each a family's plotter:
perfkit.render.families)."""
from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from perfkit.render.plotting import (
    grouped_bars,
    place_labels,
    plain_log_ticks,
    pyplot,
    round_quartiles,
    save_figure,
)
from perfkit.resultfile import datasheet, figures
from perfkit.resultfile.ceilings import Ceilings
from perfkit.resultfile.model import ResultSet
from perfkit.resultfile.payloads import Layer, MemoryEstimate, Ppp, Roofline, VggSwap


def plot_layers(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """Per-layer bars: peak allocated memory, average power and energy per call, forward vs forward +
    backward."""
    rows = list(results.family(Layer))
    if not rows:
        return []
    names = list(dict.fromkeys(case.name for _, case in rows))
    passes = list(dict.fromkeys(case.pass_ for _, case in rows))
    shown = ((figures.PEAK_ALLOCATED_MIB, "peak allocated (MiB)"), (figures.AVG_POWER_W, "average power (W)"),
             (figures.ENERGY_J, "energy per call (J)"))
    value = {(case.name, case.pass_, m.name): b.value(m) for b, case in rows for m, _ in shown}
    panels = [
        (m.name, label)
        for m, label in shown
        if any(value[n, p, m.name] is not None for n in names for p in passes)
    ]
    if not panels:
        return []
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for ax, (metric, label) in zip(axes[0], panels):
        grouped_bars(ax, names, {p: [value[n, p, metric] for n in names] for p in passes}, label)
    shape = rows[0][1].input
    fig.suptitle(f"Single layers on {results.hardware_id}, input batch {shape[0]} (NVML power over a loop)")
    return [("Per-layer memory and power", save_figure(fig, out / "layers.png"))]


def plot_vgg_swap(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """VGG16 normal vs ReLU/MaxPool swapped: time and peak memory per device and pass."""
    rows = list(results.family(VggSwap))
    if not rows:
        return []
    cases = list(dict.fromkeys(f"{c.device} {c.pass_}" for _, c in rows))
    time: dict[tuple[str, str], float | None] = {
        (f"{c.device} {c.pass_}", c.variant): b.median for b, c in rows
    }
    memory = {(f"{c.device} {c.pass_}", c.variant): b.value(figures.PEAK_ALLOCATED_MIB) for b, c in rows}
    # peaks come from the CUDA allocator: the memory panel shows only the cases that have one (none on a CPU
    # run)
    with_memory = [c for c in cases if any(memory.get((c, v)) is not None for v in ("normal", "swapped"))]
    quartiles = {(f"{c.device} {c.pass_}", c.variant): round_quartiles(b.samples) for b, c in rows}
    # one time panel per device, each linear from zero: a GPU's forward is hundreds of times a CPU's, and on
    # one log axis the bars' lengths said nothing of the swap
    panels: list[tuple[str, dict[tuple[str, str], Any], list[str], dict[tuple[str, str], Any] | None]] = [
        (f"median time on {device} (s; bars: IQR of rounds)", time,
         [c for c in cases if c.startswith(f"{device} ")], quartiles)
        for device in dict.fromkeys(c.device for _, c in rows)
    ]
    if with_memory:
        panels.append(("peak allocated (MiB)", memory, with_memory, None))
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), squeeze=False)
    variants = ("normal", "swapped")
    for ax, (label, values, shown, spread) in zip(axes[0], panels):
        grouped_bars(ax, shown, {v: [values.get((c, v)) for c in shown] for v in variants}, label,
                     None if spread is None else {v: [spread.get((c, v)) for c in shown] for v in variants})
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle("VGG16: ReLU -> MaxPool (normal) vs MaxPool -> ReLU (swapped)"
                 + ("" if len(panels) > 1 else "\n(peak memory is measured on a GPU only)"), fontsize=10)
    return [("VGG16 ReLU/MaxPool swap", save_figure(fig, out / "vgg_swap.png"))]


def plot_memory_breakdown(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """Stacked estimate terms beside the measured peak, per model and batch."""
    rows = list(results.family(MemoryEstimate))
    if not rows:
        return []
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(rows)), 4.5))
    labels = [f"{e.model}\nb{e.batch}" for _, e in rows]
    bottom = [0.0] * len(rows)
    for term in MemoryEstimate.TERMS:
        heights = [e.term_mib(term) for _, e in rows]
        ax.bar(
            [i - 0.2 for i in range(len(rows))], heights, width=0.4, bottom=bottom, label=f"estimate: {term}"
        )
        bottom = [b + h for b, h in zip(bottom, heights)]
    measured = [b.value(figures.PEAK_ALLOCATED_MIB) for b, _ in rows]
    peaked = any(m is not None for m in measured)
    if peaked:
        ax.bar([i + 0.2 for i in range(len(rows))], [m or 0 for m in measured], width=0.4, color="black",
               label="measured peak allocated")
        title = "Training-step memory: estimate terms (stacked) vs measured peak"
    else:
        title = "Training-step memory estimate (the measured peak needs a GPU)"
    ax.set_xticks(range(len(rows)), labels)
    ax.set_ylabel("MiB")
    ax.legend(fontsize=8)
    ax.set_title(title)
    # the seed's question on a GPU; on a CPU the estimate alone, whose terms are more than the parameters
    heading = "Parameter memory vs actual GPU memory" if peaked else "Training-step memory estimate"
    return [(heading, save_figure(fig, out / "memory_breakdown.png"))]


_ROOF_PRECISIONS = ("fp32", "tf32", "bf16")


def roofline_chart(results: ResultSet, path: Path) -> Path | None:
    """The course's roofline: log-log, measured (solid) and datasheet (dashed) roofs for fp32/tf32/bf16 with
    the bandwidth slope, one labelled point per model and batch (hollow where bytes came from ncu)."""
    points = [(b, p) for b, rec in results.family(Roofline) for p in rec.points]
    if not points:
        return None
    measured = Ceilings.of(results).values()
    spec = results.info.datasheet
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 6))
    xs = [2.0**e for e in range(-4, 14)]
    roofs = [("measured", measured.get(datasheet.COPY), {k: measured.get(datasheet.matmul_key(k))
                                                          for k in _ROOF_PRECISIONS}, "-")]
    if spec:
        roofs.append(
            ("datasheet", spec.bandwidth_gbps, {k: spec.tflops.get(k) for k in _ROOF_PRECISIONS}, "--")
        )
    for source, bandwidth, peaks, style in roofs:
        if not bandwidth:
            continue
        for precision, peak in peaks.items():
            if peak:
                ax.plot(xs, [min(peak, x * bandwidth / 1e3) for x in xs], style, lw=1,
                        label=f"{source} {precision} ({peak:.0f} TFLOP/s, {bandwidth:.0f} GB/s)")
    labels = []
    for bench, p in points:
        ppp = next((rec for b, rec in results.family(Ppp) if b is bench), None)
        hollow = p.bytes_source != "analytic minimum"
        attained = p.flops / bench.median / 1e12
        ax.scatter([p.intensity], [attained], s=40, facecolors="none" if hollow else None, edgecolors="black")
        batch = ppp.batch if ppp else "?"
        labels.append((p.intensity, attained, f"{p.label} b{batch}{' (ncu)' if hollow else ''}"))
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="arithmetic intensity (FLOP/byte)",
        ylabel="attained TFLOP/s",
        title=f"Roofline on {results.hardware_id}: forward passes"
              + (" (filled: analytic bytes, hollow: ncu DRAM)"
                 if any(p.bytes_source != "analytic minimum" for _, p in points) else ""),
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()  # the layout the labels are placed in; they stay out of it, so save_figure's keeps it
    place_labels(ax, labels)
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_figure(fig, path)


def plot_roofline(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    path = roofline_chart(results, out / "roofline.png")
    return [("Roofline", path)] if path else []


def plot_ppp(results: ResultSet, out: Path, top: int = 10) -> Iterable[tuple[str, Path]]:
    """Where a model's forward spends its time: each run's slowest layers, measured beside PALEO's prediction
    at the datasheet peak (the gap is the layer's distance from the platform's peak)."""
    runs = list(results.family(Ppp))
    if not runs:
        return []
    plt = pyplot()
    cols = min(2, len(runs))
    rows = math.ceil(len(runs) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(7 * cols, 0.33 * top * rows + 1.5 * rows), squeeze=False,
                             layout="constrained")  # tight_layout would print the suptitle over the first row
    for ax, (bench, run) in zip(axes.flat, runs):
        slowest = sorted(run.layers, key=lambda layer: -layer.seconds)[:top][::-1]  # the slowest at the top
        y = list(range(len(slowest)))
        # dots on the log axis, joined per layer: the gap is the layer's distance from the peak (bars on a log
        # axis drew lengths from an arbitrary origin)
        predicted = [(i, layer.predicted_s * 1e3, layer.seconds * 1e3) for i, layer in zip(y, slowest)
                     if layer.predicted_s]
        ax.hlines([i for i, _, _ in predicted], [p for _, p, _ in predicted], [m for _, _, m in predicted],
                  color="lightgrey", zorder=1)
        ax.scatter([layer.seconds * 1e3 for layer in slowest], y, label="measured", zorder=2)
        ax.scatter([p for _, p, _ in predicted], [i for i, _, _ in predicted], marker="D", s=18,
                   label="PALEO at datasheet peak", zorder=2)
        ax.set_yticks(y, [f"{layer.name} ({layer.type})" for layer in slowest], fontsize=7)
        ax.set_xscale("log")
        plain_log_ticks(ax.xaxis)
        ax.set_xlim(right=max(layer.seconds for layer in slowest) * 1e3 * 12)  # a decade free for the legend
        ax.grid(axis="x", which="major", alpha=0.3)
        share = bench.value(figures.SHARE_OF_PEAK)
        ax.set(xlabel="time per forward (ms, log)",
               title=f"{run.model} batch {run.batch}" + ("" if share is None else f": PPP {share:.0%}"))
        ax.legend(fontsize=7, loc="lower right")
    for ax in list(axes.flat)[len(runs):]:
        ax.set_visible(False)
    fig.suptitle(
        f"Platform percent of peak on {results.hardware_id}: the {top} slowest layers of each forward"
    )
    return [("Platform percent of peak: slowest layers, measured vs PALEO",
             save_figure(fig, out / "ppp.png"))]
