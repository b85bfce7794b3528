"""Several GPUs drawn: data-parallel speedup against the GPU count, a DDP step split into compute and
communication, and nccl-tests' all-reduce bus bandwidth (each a family's plotter: perfkit.render.families)."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from perfkit.render.plotting import pyplot, save_figure
from perfkit.resultfile import figures
from perfkit.resultfile.derived import scaling_runs
from perfkit.resultfile.model import ResultSet
from perfkit.resultfile.payloads import AllreduceSweep


def plot_speedup(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """Speedup vs GPUs per workload, DDP beside DataParallel, with the ideal (linear) line; the median over a
    baseline's runs, as the scaling table gives it."""
    runs = scaling_runs(results)
    if not any(r.gpus > 1 and b.value(figures.SPEEDUP) for b, r in runs):
        return []
    plt = pyplot()
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
    return [("Data-parallel speedup vs GPUs", save_figure(fig, out / "speedup.png"))]


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
    plt = pyplot()
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
    return [("DDP compute vs communication", save_figure(fig, out / "compute_comm.png"))]


def plot_busbw(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """nccl-tests' busbw of in-place all-reduce vs message size, one line per GPU count."""
    sweeps = sorted((sweep for _, sweep in results.family(AllreduceSweep)), key=lambda s: s.gpus)
    if not sweeps:
        return []
    plt = pyplot()
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
    return [("All-reduce bus bandwidth vs message size", save_figure(fig, out / "busbw.png"))]
