"""Plots of a results JSON, one plotter per benchmark family (rendering only; report.py calls them).

Each plotter takes the results and an output folder and returns (title, png path) pairs; it returns
nothing when the run holds none of its family's benchmarks.
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from perfkit.render.trend_display import axis_scale, display_unit
from perfkit.resultfile import datasheet, figures, seeds
from perfkit.resultfile.ceilings import Ceilings
from perfkit.resultfile.derived import scaling_runs
from perfkit.resultfile.model import ResultSet
from perfkit.resultfile.payloads import (
    LARGE_BATCH_CLASSES,
    AllreduceSweep,
    BatchCapacity,
    BatchEpoch,
    LargeBatch,
    Layer,
    LayerCapacity,
    MemoryEstimate,
    Ppp,
    Roofline,
    TimeToAccuracy,
    TtaRun,
    VectorAdd,
    VggSwap,
)
from perfkit.verdict import changepoints
from perfkit.verdict.trends import Trend

Plotter = Callable[[ResultSet, Path], Iterable[tuple[str, Path]]]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> Path:
    if fig.get_layout_engine() is None:  # a figure laid out as constrained keeps its suptitle clear
        fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
    return path


def plot_ceilings(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """Measured ceilings beside the datasheet figures: bandwidth, matmul rate per precision, and where
    measured one multiprocessor's copy rate and a first touch's page migration."""
    measured = Ceilings.of(results).values()
    if not measured:
        return []
    plt = _pyplot()
    spec = results.info.datasheet
    one_sm = [k for k in _SIZED_TICKS if k in figures.ONE_SM_CEILINGS and k in measured]
    touch = [k for k in _SIZED_TICKS if k in figures.FIRST_TOUCH_CEILINGS and k in measured]
    panels = [([datasheet.COPY], "GB/s"), (sorted(k for k in measured if k.startswith("matmul")), "TFLOP/s")]
    panels += [(one_sm, "GB/s, one multiprocessor")] if one_sm else []
    panels += [(touch, "GB/s migrated from the host")] if touch else []
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4))
    for ax, (names, unit) in zip(axes, panels, strict=True):
        names = [k for k in names if k in measured]
        xs = range(len(names))
        sheet = spec is not None and any(spec.ceiling(k) for k in names)  # none lists one multiprocessor's
        shift = 0.2 if sheet else 0.0
        _label(ax, ax.bar([x - shift for x in xs], [measured[k] for k in names], width=0.4, label="measured"))
        if spec is not None and sheet:
            _label(ax, ax.bar([x + shift for x in xs], [spec.ceiling(k) or 0 for k in names], width=0.4,
                              label="datasheet"))
        ax.set_xticks(list(xs), [_ceiling_tick(k) for k in names])
        ax.set_ylabel(unit)
        # linear from zero, each bar labelled: on a log axis 51 against 67 TFLOP/s looked like 1 to 3
        ax.set_ylim(0, ax.get_ylim()[1] * 1.25)  # room above the bars for the legend
        ax.legend(loc="upper left")
    fig.suptitle(f"Ceilings of {results.hardware_id} (copy counts bytes read + written)")
    return [("Measured ceilings" + (" vs datasheet" if spec else ""), _save(fig, out / "ceilings.png"))]


#: The bar labels of the ceilings measured at the vector add's sizes, in the order they are drawn: one thread
#: before one block, small K before large (figures.ONE_SM_COPIES' order), then the first touches.
_SIZED_TICKS: dict[str, str] = {
    **{figures.one_sm_copy(s, k).name: f"{s.replace('_', ' ')} K{k}" for s, k in figures.ONE_SM_COPIES},
    **{figures.first_touch(k).name: f"first touch K{k}" for k in figures.FIRST_TOUCH_KS},
}


def _ceiling_tick(key: str) -> str:
    """A ceiling's bar label: copy_bandwidth, fp32, one thread K1, first touch K100."""
    return _SIZED_TICKS.get(key) or key.replace("matmul_tflops_", "").removesuffix("_gbps")


def _quartiles(samples: tuple[float, ...]) -> tuple[float, float] | None:
    """(q1, q3) of a benchmark's rounds; None with fewer than two."""
    if len(samples) < 2:
        return None
    q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return q1, q3


def _label(ax: Any, bars: Any) -> None:
    """Each bar's value above it, so a short bar on a linear axis still reads (12,908, not 1.29e+04)."""
    ax.bar_label(bars, fmt=lambda v: f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}", fontsize=7, padding=1)


def plot_vector_add(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """The course's two charts: time vs K (log-log), one line per launch scenario plus the CPU loop."""
    series: dict[tuple[str, str], dict[float, float]] = defaultdict(dict)
    for bench, case in results.family(VectorAdd):
        series[case.mode, case.scenario][float(case.k)] = bench.median
    if not any(mode != "cpu" for mode, _ in series):
        return []
    plt = _pyplot()
    charts = []
    for title, modes in (
        ("explicit copies (whole program step)", ("explicit",)),
        ("unified memory (solid: first launch, dashed: warm)", ("managed_first", "managed_warm")),
    ):
        fig, ax = plt.subplots(figsize=(8.5, 5))
        for (mode, scenario), points in sorted(series.items()):
            if mode in modes or mode == "cpu" and scenario == "cpu_loop":
                ks = sorted(points)
                style = "--" if mode == "managed_warm" else ("k:" if mode == "cpu" else "-")
                label = (
                    "CPU (single-thread loop)"
                    if mode == "cpu"
                    else f"{scenario} {mode.removeprefix('managed_')}"
                )
                ax.plot(ks, [points[k] for k in ks], style, marker="o", label=label)
        ax.set(xscale="log", yscale="log", xlabel="K (million float32 elements)", ylabel="time (s)",
               title=f"Vector add, {title}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the lines, never over them
        charts.append((f"Vector add: {title}", _save(fig, out / f"vector_add_{modes[0].split('_')[0]}.png")))
    return charts


def _plain_log_ticks(*axes: Any) -> None:
    """Log axes labelled 0.1, 1, 10 (and 32, 128 where a decade holds few ticks), without minor labels such as
    3x10^-1 and 4x10^-1 printed over each other."""
    from matplotlib import ticker

    for axis in axes:
        axis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        axis.set_minor_formatter(ticker.NullFormatter())


def _grouped_bars(ax: Any, groups: list[str], series: dict[str, list[float | None]], ylabel: str,
                  spread: dict[str, list[tuple[float, float] | None]] | None = None) -> None:
    """Bars per group and series on a linear axis from zero, each labelled with its value; ``spread``: per
    series and group the (q1, q3) of its rounds, drawn as an error bar."""
    width = 0.8 / max(len(series), 1)
    for i, (label, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        heights = [v if v is not None else 0 for v in values]
        quartiles = (spread or {}).get(label)
        yerr = None
        if quartiles:
            yerr = [[h - q[0] if q else 0 for h, q in zip(heights, quartiles)],
                    [q[1] - h if q else 0 for h, q in zip(heights, quartiles)]]
        _label(ax, ax.bar(xs, heights, width=width, label=label, yerr=yerr, capsize=3 if yerr else 0))
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.15)  # room for the labels
    ax.legend(fontsize=8)


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
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for ax, (metric, label) in zip(axes[0], panels):
        _grouped_bars(ax, names, {p: [value[n, p, metric] for n in names] for p in passes}, label)
    shape = rows[0][1].input
    fig.suptitle(f"Single layers on {results.hardware_id}, input batch {shape[0]} (NVML power over a loop)")
    return [("Per-layer memory and power", _save(fig, out / "layers.png"))]


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
    quartiles = {(f"{c.device} {c.pass_}", c.variant): _quartiles(b.samples) for b, c in rows}
    # one time panel per device, each linear from zero: a GPU's forward is hundreds of times a CPU's, and on
    # one log axis the bars' lengths said nothing of the swap
    panels: list[tuple[str, dict[tuple[str, str], Any], list[str], dict[tuple[str, str], Any] | None]] = [
        (f"median time on {device} (s; bars: IQR of rounds)", time,
         [c for c in cases if c.startswith(f"{device} ")], quartiles)
        for device in dict.fromkeys(c.device for _, c in rows)
    ]
    if with_memory:
        panels.append(("peak allocated (MiB)", memory, with_memory, None))
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), squeeze=False)
    variants = ("normal", "swapped")
    for ax, (label, values, shown, spread) in zip(axes[0], panels):
        _grouped_bars(ax, shown, {v: [values.get((c, v)) for c in shown] for v in variants}, label,
                      None if spread is None else {v: [spread.get((c, v)) for c in shown] for v in variants})
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle("VGG16: ReLU -> MaxPool (normal) vs MaxPool -> ReLU (swapped)"
                 + ("" if len(panels) > 1 else "\n(peak memory is measured on a GPU only)"), fontsize=10)
    return [("VGG16 ReLU/MaxPool swap", _save(fig, out / "vgg_swap.png"))]


def plot_memory_breakdown(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """Stacked estimate terms beside the measured peak, per model and batch."""
    rows = list(results.family(MemoryEstimate))
    if not rows:
        return []
    plt = _pyplot()
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
    heading = "Parameter memory vs actual GPU memory" if peaked else "Parameter memory estimate"
    return [(heading, _save(fig, out / "memory_breakdown.png"))]


_ROOF_PRECISIONS = ("fp32", "tf32", "bf16")


def roofline_chart(results: ResultSet, path: Path) -> Path | None:
    """The course's roofline: log-log, measured (solid) and datasheet (dashed) roofs for fp32/tf32/bf16 with
    the bandwidth slope, one labelled point per model and batch (hollow where bytes came from ncu)."""
    points = [(b, p) for b, rec in results.family(Roofline) for p in rec.points]
    if not points:
        return None
    measured = Ceilings.of(results).values()
    spec = results.info.datasheet
    plt = _pyplot()
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
    fig.tight_layout()  # the layout the labels are placed in; they stay out of it, so _save's keeps it
    _place_labels(ax, labels)
    path.parent.mkdir(parents=True, exist_ok=True)
    return _save(fig, path)


#: Where a point's label may go, in points from the point, nearest first: right, left, above, below, then the
#: diagonals further out (joined to the point by a line).
_LABEL_OFFSETS = ((7, 0), (-7, 0), (0, 8), (0, -8), (10, 10), (-10, 10), (10, -10), (-10, -10),
                  (18, 18), (-18, 18), (18, -18), (-18, -18), (28, 30), (-28, 30), (28, -30), (-28, -30))


def _place_labels(ax: Any, labels: Sequence[tuple[float, float, str]], fontsize: float = 7,
                  others: Sequence[tuple[float, float]] = ()) -> None:
    """Each (x, y, text) label at the nearest of :data:`_LABEL_OFFSETS` where its box covers no other label,
    no point and no legend (the roofline's VGG16 and VGG19 at one batch sit a few pixels apart: labels one
    line apart still printed over each other and over the points); ``others``: unlabelled points to keep
    clear too. A label with no free place keeps the last."""
    from matplotlib.transforms import Bbox

    renderer = ax.figure.canvas.get_renderer()
    to_pixels = ax.transData.transform
    marker = 5.0  # pixels about a point's centre its marker covers
    taken = [Bbox.from_extents(px - marker, py - marker, px + marker, py + marker)
             for px, py in (to_pixels(xy) for xy in [*((x, y) for x, y, _ in labels), *others])]
    taken += [legend.get_window_extent(renderer) for legend in [ax.get_legend()] if legend is not None]
    for x, y, text in labels:
        for dx, dy in _LABEL_OFFSETS:  # the last place is kept where none is free
            box = _text_box(ax, renderer, (x, y, text), (dx, dy), fontsize)
            if ax.bbox.contains(box.x0, box.y0) and ax.bbox.contains(box.x1, box.y1) \
                    and not any(box.overlaps(other) for other in taken):
                break
        taken.append(box)
        note = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize,
                           **_alignment(dx, dy),
                           # a diagonal label is joined to its point, which it names
                           arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "0.4"} if dx and dy else None)
        note.set_in_layout(False)


def _alignment(dx: float, dy: float) -> dict[str, str]:
    """A label's alignment that keeps it on the side of its point it is offset to."""
    return {"ha": "left" if dx > 0 else "right" if dx < 0 else "center",
            "va": "bottom" if dy > 0 else "top" if dy < 0 else "center"}


def _text_box(ax: Any, renderer: Any, label: tuple[float, float, str], offset: tuple[float, float],
              fontsize: float) -> Any:
    """The pixels a label's text would cover at ``offset`` (points) from its point (a leader line would
    widen an annotation's own box to the point)."""
    x, y, text = label
    note = ax.annotate(text, (x, y), xytext=offset, textcoords="offset points", fontsize=fontsize,
                       **_alignment(*offset))
    box = note.get_window_extent(renderer)
    note.remove()
    return box


def plot_roofline(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    path = roofline_chart(results, out / "roofline.png")
    return [("Roofline", path)] if path else []


def plot_speedup(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """Speedup vs GPUs per workload, DDP beside DataParallel, with the ideal (linear) line; the median over a
    baseline's runs, as the scaling table gives it."""
    runs = scaling_runs(results)
    if not any(r.gpus > 1 and b.value(figures.SPEEDUP) for b, r in runs):
        return []
    plt = _pyplot()
    methods = sorted({r.method for _, r in runs})
    most = max(r.gpus for _, r in runs)
    fig, axes = plt.subplots(1, len(methods), figsize=(6 * len(methods), 4.5), sharey=True, squeeze=False)
    for ax, method in zip(axes[0], methods):
        lines: dict[str, dict[int, float]] = defaultdict(dict)
        for bench, run in runs:
            value = 1.0 if run.gpus == 1 else results.median(bench.fullname, figures.SPEEDUP.name)
            if run.method == method and value is not None:
                lines[run.workload][run.gpus] = value
        for workload, points in sorted(lines.items()):
            gpus = sorted(points)
            ax.plot(gpus, [points[g] for g in gpus], marker="o", label=workload)
        ax.plot([1, most], [1, most], "k--", label="ideal")
        ax.set(
            xlabel="GPUs",
            ylabel="speedup over 1 GPU (images/s)",
            title=method,
            xticks=sorted({r.gpus for _, r in runs}),
        )
        ax.legend(fontsize=7)
    fig.suptitle(
        f"Data-parallel speedup on {results.hardware_id} (weak: batch per GPU fixed; strong: global)"
    )
    return [("Data-parallel speedup vs GPUs", _save(fig, out / "speedup.png"))]


def plot_compute_comm(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """Each multi-GPU DDP step as 100%: compute (the no_sync step) and exposed communication, with the
    profiler's NCCL kernel time and the course's subtraction estimate marked on the same scale; each the
    median over a baseline's runs, as the scaling table gives it (the NCCL time moved 30x between runs)."""
    shown = (figures.COMPUTE_MS, figures.COMM_EXPOSED_MS, figures.NCCL_KERNEL_MS, figures.COMM_SUBTRACTION_MS)
    ddp = [(r, {spec.name: results.median(b.fullname, spec.name) for spec in shown})
           for b, r in scaling_runs(results) if r.method == "DDP" and r.gpus > 1]
    compute_ms, exposed_ms = figures.COMPUTE_MS.name, figures.COMM_EXPOSED_MS.name
    runs = [(r, m) for r, m in ddp if m[compute_ms] is not None and m[exposed_ms] is not None]
    if not runs:
        return []
    plt = _pyplot()
    labels = [f"{r.workload} ×{r.gpus}" for r, _ in runs]
    steps = [(m[compute_ms] or 0.0) + (m[exposed_ms] or 0.0) for _, m in runs]
    compute = [100 * min((m[compute_ms] or 0.0) / s, 1.0) for (_, m), s in zip(runs, steps)]
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(runs) + 1.8))
    ax.barh(labels, compute, label="compute (step under no_sync)")
    ax.barh(labels, [100 - c for c in compute], left=compute, label="exposed communication (step - no_sync)")
    for series, marker, color, label in (
        (figures.NCCL_KERNEL_MS, "|", "k", "NCCL kernel time (profiler)"),
        (figures.COMM_SUBTRACTION_MS, "x", "r", "course's subtraction estimate"),
    ):
        points = [(100 * max(value, 0.0) / s, i) for i, ((_, m), s) in enumerate(zip(runs, steps))
                  if (value := m[series.name]) is not None]
        ax.scatter([x for x, _ in points], [i for _, i in points], marker=marker, color=color, s=80, zorder=3,
                   label=label)
    ax.set(
        xlabel="% of the step time (rank 0)", title="DDP step: compute vs communication, measured three ways"
    )
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)  # below the x label
    return [("DDP compute vs communication", _save(fig, out / "compute_comm.png"))]


def plot_busbw(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """nccl-tests' busbw of in-place all-reduce vs message size, one line per GPU count."""
    sweeps = sorted((sweep for _, sweep in results.family(AllreduceSweep)), key=lambda s: s.gpus)
    if not sweeps:
        return []
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for sweep in sweeps:
        ax.plot(
            [r.bytes for r in sweep.rows],
            [r.busbw_gbps for r in sweep.rows],
            marker="o",
            label=f"{sweep.gpus} GPUs",
        )
    ax.set(xscale="log", xlabel="message size (bytes)", ylabel="busbw (GB/s)",
           title=f"All-reduce busbw on {results.hardware_id} (busbw = algbw·2(n-1)/n)")
    ax.legend()
    return [("All-reduce bus bandwidth vs message size", _save(fig, out / "busbw.png"))]


def plot_batch_sweep(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """Epoch time and images/s vs batch size (log x), one line per way of feeding the data, with the largest
    batch that fits marked (under the memory its search had) and seed 003's V100 beside them as images/s at
    the batches this run measured: its epochs held 50,000 images, a quick run's a few hundred."""
    epochs = sorted((rec for _, rec in results.family(BatchEpoch)), key=lambda r: r.batch)
    if not epochs:
        return []
    plt = _pyplot()
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
            ax.axvline(cap.largest, color="r", linestyle="--", label=_capacity_label(cap, measured))
    left.set(xscale="log", yscale=axis_scale([r.epoch_s for r in epochs]), xlabel="batch size",
             ylabel="epoch time (s)", title=f"one epoch of {epochs[0].dataset:,} images")
    right.set(xscale="log", yscale=axis_scale([r.images_per_s for r in epochs] + list(seed.values())),
              xlabel="batch size", ylabel="images/s", title="throughput")
    _plain_log_ticks(left.xaxis, right.xaxis, left.yaxis, right.yaxis)
    for ax in (left, right):
        ax.set_xticks(sorted(measured))  # every batch measured, labelled
    shown: dict[str, Any] = {}  # each label once: both panels draw the variants and the largest batch
    for ax in (left, right):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            shown.setdefault(label, handle)
    fig.legend(list(shown.values()), list(shown), fontsize=7, loc="outside lower center", ncol=2)
    fig.suptitle(f"{epochs[0].model} on {epochs[0].dataset} images, {results.hardware_id}")
    return [("Epoch time vs batch size", _save(fig, out / "batch_sweep.png"))]


def _capacity_label(cap: BatchCapacity, measured: set[int]) -> str:
    """The largest batch the capacity search fit, and the memory it had. Where the sweep ran a larger batch
    (a CPU's search has a synthetic budget, the sweep's epochs the host's memory) "out of memory above" would
    contradict the plot beside it: it says that the sweep had more memory instead."""
    room = cap.room or (f"{cap.cap_gib:.2f} GiB per GPU (capped)" if cap.cap_gib else "")
    under = f" under {room}" if room else ""
    above = sorted(b for b in measured if b > cap.largest)
    if above:
        return (f"largest batch the capacity search fit{under}: {cap.largest} (the sweep's epochs had more "
                f"memory: batch {above[-1]} ran)")
    beyond = " (out of memory above)" if cap.stopped_by == "out of memory" else " (the whole dataset)"
    within = under or " its search's memory"
    return f"largest batch that fits{within}: {cap.largest}{beyond}"


def plot_layer_capacity(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """How many layers of the course's stack fit, per search and cap, with the seed's GTX 1080 Ti answer; and
    for the two-GPU split, each device's peak memory."""
    records = [rec for _, rec in results.family(LayerCapacity)]
    if not records:
        return []
    plt = _pyplot()
    split = [r for r in records if r.knob == "split"]
    fig, axes = plt.subplots(1, 2 if split else 1, figsize=(11 if split else 6.5, 4.2), squeeze=False)
    ax = axes[0][0]
    labels = [f"{r.knob}\n{r.memory}" for r in records]
    ax.bar(labels, [r.num_conv for r in records], label="conv layers")
    ax.bar(labels, [r.num_fc for r in records], bottom=[r.num_conv for r in records], label="fc layers")
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
    return [("Layer-stack capacity", _save(fig, out / "layer_capacity.png"))]


def plot_ppp(results: ResultSet, out: Path, top: int = 10) -> Iterable[tuple[str, Path]]:
    """Where a model's forward spends its time: each run's slowest layers, measured beside PALEO's prediction
    at the datasheet peak (the gap is the layer's distance from the platform's peak)."""
    runs = list(results.family(Ppp))
    if not runs:
        return []
    plt = _pyplot()
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
        _plain_log_ticks(ax.xaxis)
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
    return [("Platform percent of peak: slowest layers, measured vs PALEO", _save(fig, out / "ppp.png"))]


def plot_time_to_accuracy(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """Validation accuracy per epoch of every run against its target, and the GPU and memory utilisation
    over the runs (a 1 s moving average; the mean in the legend)."""
    records = [rec for _, rec in results.family(TimeToAccuracy)]
    if not records:
        return []
    plt = _pyplot()
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
    return [(heading, _save(fig, out / "time_to_accuracy.png"))]


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
    plt = _pyplot()
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
    return [("Large-batch training: accuracy per epoch", _save(fig, out / "large_batch.png"))]


#: Each benchmark family (its bench file, perfkit.resultfile.model.family_of) and its plots, in report order;
#: a family adds its plots here, and the report draws them beside the family's table.
FAMILY_PLOTTERS: dict[str, tuple[Plotter, ...]] = {
    "test_ceilings": (plot_ceilings,),
    "test_vector_add": (plot_vector_add,),
    "test_layers": (plot_layers,),
    "test_vgg_swap": (plot_vgg_swap,),
    "test_model_memory": (plot_memory_breakdown,),
    "test_ppp": (plot_roofline, plot_ppp),
    "test_data_parallel": (plot_speedup, plot_compute_comm, plot_busbw),
    "test_capacity": (plot_layer_capacity,),
    "test_batch_sweep": (plot_batch_sweep,),
    "test_time_to_accuracy": (plot_time_to_accuracy,),
    "test_large_batch": (plot_large_batch,),
}


def hardware_chart(rows: Iterable[Any], baseline_id: str, current_id: str, path: Path) -> Path | None:
    """Across two machines (``baseline_id`` and ``current_id`` name them): each benchmark's measured speedup
    against the speedup expected of it (``across.HardwareRow``): squares where a kernel's ceiling gave it,
    circles where the roofline model did (coloured by the larger share of the model's time), the diagonal
    where they agree, the band of x1.15 (as expected) shaded and x1.25 (FAR beyond) dashed; the benchmarks
    outside the band are named. A ceiling's own benchmark is left out, and counted in the title: its speedup
    is its expectation by definition, a point on the diagonal that checks nothing. None when no other
    benchmark carries an expectation."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

    rows = list(rows)
    points = [r for r in rows if r.expected and 0 < r.speedup < float("inf") and not r.by_definition]
    ceilings = sum(1 for r in rows if r.by_definition)
    if not points:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 7))
    groups: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for r in points:
        groups[_expected_from(r)].append(r)
    for i, ((label, marker), mine) in enumerate(sorted(groups.items())):
        ax.scatter([r.expected for r in mine], [r.speedup for r in mine], color=f"C{i}", marker=marker,
                   label=f"{label} ({len(mine)})", s=30, zorder=3, edgecolors="white", linewidths=0.5)
    low = min(min(r.expected, r.speedup) for r in points) / 1.3
    high = max(max(r.expected, r.speedup) for r in points) * 1.3
    near, far = points[0].NEAR, points[0].FAR  # across.HardwareRow's bands, the ones its verdicts use
    ax.plot([low, high], [low, high], "k-", lw=0.8, label="measured = expected")
    ax.fill_between([low, high], [low / near, high / near], [low * near, high * near], color="grey",
                    alpha=0.2, label=f"as expected: within x{near}")
    for factor in (far, 1 / far):
        ax.plot([low, high], [low * factor, high * factor], "k--", lw=0.6,
                label=f"x{far}: FAR from expected beyond" if factor == far else None)
    missed = sorted((r for r in points if not 1 / near <= r.ratio <= near), key=lambda r: -r.speedup)
    ax.set(xscale="log", yscale="log")  # before the tick locators: setting a scale replaces them
    # plain numbers where the speedups span less than two decades (0.6, 0.7, ... 1.2, 1.5), else 1-2-5 steps
    plain = [v * 10.0**k for k in range(-4, 4) for v in (1, 1.2, 1.5, 2, 3, 4, 5, 6, 7, 8, 9)]
    shown = [v for v in plain if low <= v <= high]
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(FixedLocator(shown) if len(shown) <= 14 else LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_minor_locator(NullLocator())
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.3g}"))
    within = len(points) - len(missed)
    sides = f"{baseline_id} / {current_id} time"
    ax.set(xlim=(low, high), ylim=(low, high),
           xlabel=f"expected speedup of {current_id} over {baseline_id}",
           ylabel=f"measured speedup ({sides if len(sides) <= 50 else 'baseline time / current time'})",
           title=f"Across hardware: {within} of {len(points)} benchmarks within x{near} of their "
                 "expected speedup" + (f"\n{ceilings} ceiling benchmark(s) not shown: their speedup is "
                                       "their expectation" if ceilings else ""))
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()  # the layout the names are placed in (they stay out of it)
    _place_labels(ax, [(r.expected, r.speedup, r.benchmark.split("::")[-1]) for r in missed], 7.5,
                  [(r.expected, r.speedup) for r in points])
    return _save(fig, path)


def _expected_from(row: Any) -> tuple[str, str]:
    """A row's source of expectation for the legend, and its marker: a kernel's ceiling (a square), or the
    model by the larger share of its time (a circle)."""
    if row.model is None:
        kind = "launch" if row.bound == figures.GRAPH_REPLAY_S.name else figures.ceiling_label(row.bound)
        return f"kernel, its {kind} ceiling", "s"
    shares = row.model.current.shares()
    return f"model, {max(shares, key=shares.get)}-bound", "o"


def history_chart(trend: Trend, path: Path, figure: str = figures.TIME) -> Path:
    """One benchmark's figure over its stored runs (oldest first, numbered as every table numbers them),
    change points as vertical lines and each segment's median as a horizontal one: the shift is read off the
    medians, not off single noisy runs. Where the method of measuring the figure (perfkit.resultfile.figures.
    METHODS) or the machine under the hardware id (a CPU of another generation) changes the line breaks, at a
    grey dotted line naming what measured the new series and its step: the values either side are two
    series, not a change."""
    from itertools import pairwise

    points, changes, breaks = list(trend.points), sorted(c.index for c in trend.changes), trend.breaks
    values = [v for _, v in points]
    scale, unit = display_unit(values, trend.unit)
    shown = [v / scale for v in values]
    runs = list(range(1, len(shown) + 1))
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for a, b in pairwise([0, *breaks, len(shown)]):
        ax.plot(runs[a:b], shown[a:b], marker="o", ms=4, lw=1, color="tab:blue",
                label=f"{figure} (one point per run)" if a == 0 else None)
    segments = trend.segments()
    median_from = {a: median / scale for a, _, median in segments}
    for a, b, _ in segments:
        ax.hlines(median_from[a], a + 0.5, b + 0.5, colors="tab:orange", lw=2,
                  label="segment median" if a == 0 else None)
    for i, index in enumerate(changes):
        before = median_from[max(a for a in median_from if a < index)]
        change = median_from[index] / before - 1 if before else float("nan")
        ax.axvline(index + 0.5, color="tab:red", ls="--", lw=1.2, label="change point" if i == 0 else None)
        ax.annotate(f"{change:+.1%}", (index + 0.5, max(shown)), xytext=(3, -12), textcoords="offset points",
                    color="tab:red", fontsize=8)
    for i, index in enumerate(breaks):
        ax.axvline(index + 0.5, color="grey", ls=":", lw=1.5,
                   label="measured another way or on another machine from here: a new series" if i == 0
                   else None)
    for index in [0, *breaks] if breaks else []:  # each series says what measured it, and its step
        ax.annotate(_series_name(trend, index), (index + 0.5, max(shown)), xytext=(3, -12),
                    textcoords="offset points", color="dimgrey", fontsize=8, va="top")
    step = max(1, math.ceil(len(runs) / 8))
    days = [d[:10] for d, _ in points]
    # the run's number (as the tables number them) over its date, and its time where runs share a day; a run a
    # baseline kept without its date (perfkit.store.baseline_runs) says so
    when = [("undated" if not d else d[:10] if len(set(days)) == len(days) else f"{d[5:10]}\n{d[11:16]}")
            for d, _ in points]
    ax.set_xticks(runs[::step], [f"{r}\n{w}" for w, r in zip(when[::step], runs[::step])], fontsize=7)
    ax.set(
        xlabel="its run (of the stored runs that hold it), oldest first, and its date",
        ylabel=f"{figure} ({unit})" if unit else figure,
        title=trend.benchmark if len(trend.benchmark) <= 90 else "..." + trend.benchmark[-87:],
    )
    if axis_scale(shown) == "log":  # two series a decade apart (another CPU): each keeps its own shape
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    return _save(fig, path)


def _series_name(trend: Trend, index: int) -> str:
    """What measured the series that begins at point ``index``: its method where the trend changes method, its
    CPU where it changes machine; after the first, its step from the series before."""
    said = [f"method {trend.methods[index]}"] if changepoints.breaks(trend.methods) else []
    said += [f"CPU {trend.machines[index]}"] if trend.moves and trend.machines[index] else []
    return "\n".join([", ".join(said), *([f"{trend.step(index):+.0%}"] if index else [])])
