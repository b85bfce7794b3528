"""The device's ceilings and the vector add drawn: measured ceilings beside the datasheet's, and the
course's time-vs-K charts of the vector add (each a family's plotter: perfkit.render.families)."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from perfkit.render.plotting import label_bars, pyplot, save_figure
from perfkit.resultfile import datasheet, figures
from perfkit.resultfile.ceilings import Ceilings
from perfkit.resultfile.model import ResultSet
from perfkit.resultfile.payloads import VectorAdd


def plot_ceilings(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """Measured ceilings beside the datasheet figures: bandwidth, matmul rate per precision, and where
    measured one multiprocessor's copy rate and a first touch's page migration."""
    measured = Ceilings.of(results).values()
    if not measured:
        return []
    plt = pyplot()
    spec = results.info.datasheet
    one_sm = [k for k in _SIZED_TICKS if k in figures.ONE_SM_CEILINGS and k in measured]
    touch = [k for k in _SIZED_TICKS if k in figures.FIRST_TOUCH_CEILINGS and k in measured]
    panels = [([datasheet.COPY], "GB/s"), (sorted(k for k in measured if k.startswith("matmul")), "TFLOP/s")]
    panels += [(one_sm, "GB/s, one multiprocessor")] if one_sm else []
    panels += [(touch, "GB/s migrated from the host")] if touch else []
    # two panels a row: four in one row drew 2420 px wide beside a table, its labels a few pixels high
    cols = min(2, len(panels))
    rows = -(-len(panels) // cols)
    fig, grid = plt.subplots(rows, cols, figsize=(5.5 * cols, 4 * rows), squeeze=False)
    axes = list(grid.flat)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    for ax, (names, unit) in zip(axes, panels):
        names = [k for k in names if k in measured]
        xs = range(len(names))
        sheet = spec is not None and any(spec.ceiling(k) for k in names)  # none lists one multiprocessor's
        shift = 0.2 if sheet else 0.0
        label_bars(ax, ax.bar([x - shift for x in xs], [measured[k] for k in names], width=0.4,
                              label="measured"))
        if spec is not None and sheet:
            label_bars(ax, ax.bar([x + shift for x in xs], [spec.ceiling(k) or 0 for k in names], width=0.4,
                                  label="datasheet"))
        ax.set_xticks(list(xs), [_ceiling_tick(k) for k in names])
        ax.set_ylabel(unit)
        # linear from zero, each bar labelled: on a log axis 51 against 67 TFLOP/s looked like 1 to 3
        ax.set_ylim(0, ax.get_ylim()[1] * 1.25)  # room above the bars for the legend
        ax.legend(loc="upper left")
    fig.suptitle(f"Ceilings of {results.hardware_id} (copy counts bytes read + written)")
    return [("Measured ceilings" + (" vs datasheet" if spec else ""), save_figure(fig, out / "ceilings.png"))]


#: The bar labels of the ceilings measured at the vector add's sizes, in the order they are drawn: one thread
#: before one block, small K before large (figures.ONE_SM_COPIES' order), then the first touches.
_SIZED_TICKS: dict[str, str] = {
    **{figures.one_sm_copy(s, k).name: f"{s.replace('_', ' ')} K{k}" for s, k in figures.ONE_SM_COPIES},
    **{figures.first_touch(k).name: f"first touch K{k}" for k in figures.FIRST_TOUCH_KS},
}


def _ceiling_tick(key: str) -> str:
    """A ceiling's bar label: copy_bandwidth, fp32, one thread K1, first touch K100."""
    return _SIZED_TICKS.get(key) or key.replace("matmul_tflops_", "").removesuffix("_gbps")


def plot_vector_add(results: ResultSet, out: Path) -> Iterable[tuple[str, Path]]:
    """The course's two charts: time vs K (log-log), one line per launch scenario plus the CPU loop."""
    series: dict[tuple[str, str], dict[float, float]] = defaultdict(dict)
    for bench, case in results.family(VectorAdd):
        series[case.mode, case.scenario][float(case.k)] = bench.median
    if not any(mode != "cpu" for mode, _ in series):
        return []
    plt = pyplot()
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
        png = out / f"vector_add_{modes[0].split('_')[0]}.png"
        charts.append((f"Vector add: {title}", save_figure(fig, png)))
    return charts
