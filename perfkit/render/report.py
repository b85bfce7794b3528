"""The run report: one list of sections (perfkit.render.document) written as markdown and as a
self-contained HTML page, with its plots (perfkit.render.plots) beside them.

It opens with the verdict line and the rows a person should read (perfkit.render.verdicts), each pointing at
its family's section and, with kept runs, at its trend; then the fingerprint, across hardware the measured
against the expected speedups (perfkit.render.speedups), one section per family and the kept runs' trends.
"""
from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from perfkit.render import document, trend_display
from perfkit.render.document import Collapsed, Columns, Document, Image, Section, Spark, Table, Text
from perfkit.render.plots import FAMILY_PLOTTERS, hardware_chart, history_chart
from perfkit.render.speedups import hardware_blocks, machine_names
from perfkit.render.tables import fmt_time, fmt_value
from perfkit.render.verdicts import Pointers, render, to_read, verdict_blocks, verdict_line
from perfkit.resultfile import figures, seeds
from perfkit.resultfile.ceilings import Ceilings
from perfkit.resultfile.derived import scaling_runs
from perfkit.resultfile.figures import TIME
from perfkit.resultfile.metrics import MetricSpec
from perfkit.resultfile.model import BenchmarkEntry, ResultSet, family_of
from perfkit.resultfile.payloads import (
    FAMILIES,
    LARGE_BATCH_CLASSES,
    BatchCapacity,
    BatchEpoch,
    LargeBatch,
    LayerCapacity,
    Ppp,
    TimeToAccuracy,
)
from perfkit.store import storage_folder
from perfkit.verdict import changepoints, trends
from perfkit.verdict.judge import Comparison, Row, Verdict


def write_report(results: ResultSet, out: Path, comparison: Comparison | None = None,
                 baseline_name: str = "", kept: storage_folder.History | None = None,
                 first: Sequence[Section] = ()) -> Path:
    """Write ``report.md``, its PNG plots and ``report.html`` (the same sections, self-contained) into
    ``out``, and with a comparison ``verdicts.json`` (as ``perfkit compare --format json`` prints it); returns
    the markdown path.

    The page opens with the verdict line and the rows a person should read, each pointing at its family's
    section (its table beside its plots) and, with kept runs, at its trend; the rest is folded away or
    follows: the fingerprint, then one section per family, then the history. ``first``: sections that come
    before all of it (an A/B's table, which is the stronger evidence)."""
    out.mkdir(parents=True, exist_ok=True)
    kept = kept if kept is not None and len(kept) else None
    ceilings = Ceilings.of(results)
    verdicts = comparison.benchmark_verdicts() if comparison is not None else {}
    families = _family_sections(results, ceilings, out, verdicts,
                                {t.benchmark: t for t in trends.lines(kept.runs)} if kept else {})
    read = to_read(comparison) if comparison is not None else []
    charted = _charted_trends(kept, read) if kept else {}
    title = f"perfkit report: {results.hardware_id}"
    when = results.datetime[:16].replace("T", " ")
    where = f"profile `{results.info.profile}`, device `{results.info.device}`, run {when}"
    opening: list[document.Block] = [Text(f"{where}; not compared: no baseline given (--baseline)")]
    if comparison is not None:
        (out / "verdicts.json").write_text(render(comparison, "json"), encoding="utf-8")  # as compare prints
        title = verdict_line(comparison)
        opening = verdict_blocks(comparison, _pointers(families, charted),
                                 lead=[f"{where}; against `{baseline_name}`; every verdict: `verdicts.json`"],
                                 hardware=False)
    sections = [*first, Section("", tuple(opening)), _fingerprint_section(results)]
    unreadable = results.unreadable(FAMILIES)
    if unreadable:
        sections.append(Section("Records that could not be read", (
            Text("These entries keep their place in every comparison but lose their plot and table rows:"),
            Table.of(["record"], [[line] for line in unreadable]))))
    if comparison is not None and comparison.hardware_rows:
        sections.append(_hardware_section(comparison, out))
    sections += [section for family in families.values() for section in family]
    if kept is not None:
        sections += _history_section(kept, out, charted)
    return document.write(Document(title, tuple(sections)), out)


def _hardware_section(cmp: Comparison, out: Path) -> Section:
    """Across hardware: the plot of measured against expected speedup, then every benchmark's row."""
    chart = hardware_chart(cmp.hardware_rows, *machine_names(cmp), out / "hardware.png")
    image: tuple[document.Block, ...] = (Image("measured vs expected speedup", chart),) if chart else ()
    return Section("Across hardware: measured vs expected speedup", (*image, *hardware_blocks(cmp)))


def _fingerprint_section(results: ResultSet) -> Section:
    """The machine and software the run measured, folded: what to check when a verdict surprises."""
    fingerprint = results.info.fingerprint
    return Section("Fingerprint", (Collapsed(f"{len(fingerprint)} fields of {results.hardware_id}", (
        Table.of(["field", "value"], [[k, str(v)] for k, v in fingerprint.items()]),)),))


def _pointers(families: dict[str, list[Section]], charted: dict[tuple[str, str], trends.Trend]) -> Pointers:
    """Each row to read links its benchmark to its family's section (its plots) and, with kept runs, shows
    the trend of its figure where they hold it, linked to its chart."""

    def link(row: Row) -> str:
        family = family_of(row.benchmark)
        return f"[{row.benchmark}](#{document.anchor(family)})" if family in families else row.benchmark

    def trend(row: Row) -> document.Cell:
        found = charted.get((row.benchmark, row.figure))
        return _spark(found, row.figure, _chart_title(found, row.figure)) if found else ""

    return Pointers(link, trend if charted else None)


def _charted_trends(kept: storage_folder.History, rows: list[Row]) -> dict[tuple[str, str], trends.Trend]:
    """The trend of each row to read whose figure the kept runs hold, keyed by (benchmark, figure)."""
    found: dict[tuple[str, str], trends.Trend] = {}
    for figure in dict.fromkeys(r.figure for r in rows):
        names = {r.benchmark for r in rows if r.figure == figure}
        found |= {(t.benchmark, figure): t for t in trends.trends(kept.runs, figure=figure, names=names)}
    return found


def _chart_title(trend: trends.Trend, figure: str) -> str:
    return f"{figure} of {trend.benchmark}"


def _family_sections(results: ResultSet, ceilings: Ceilings, out: Path, verdicts: dict[str, Verdict],
                     kept_times: dict[str, trends.Trend]) -> dict[str, list[Section]]:
    """Per family (a bench file), those with plots first in their order (plots.FAMILY_PLOTTERS), then the
    rest in the run's: its benchmarks' table beside its plots, then its own tables below."""
    benches: dict[str, list[BenchmarkEntry]] = defaultdict(list)
    for bench in results.benchmarks:
        benches[bench.family].append(bench)
    out_sections: dict[str, list[Section]] = {}
    for family in dict.fromkeys([*FAMILY_PLOTTERS, *_FAMILY_TABLES, *benches]):
        plotted = [Image(title, path) for plotter in FAMILY_PLOTTERS.get(family, ())
                   for title, path in plotter(results, out)]
        tables = _FAMILY_TABLES[family](results, ceilings) if family in _FAMILY_TABLES else []
        if not (benches.get(family) or plotted or tables):
            continue
        mine = benches.get(family, [])
        left = [_bench_table(mine, verdicts, kept_times)] if mine else []
        out_sections[family] = [Section(family, (Columns(tuple(left), tuple(plotted)), *_metrics(mine))),
                                *(dataclasses.replace(t, level=t.level + 1) for t in tables)]
    return out_sections


def _cell(bench: BenchmarkEntry, spec: MetricSpec, fmt: str = "{:.3g}") -> str:
    """A metric as a table cell: times in their unit, other figures in ``fmt``; "-" where it is absent."""
    metric = bench.metrics.get(spec.name)
    return (
        "-"
        if metric is None
        else (fmt_time(metric.value) if metric.unit == "s" else fmt.format(metric.value))
    )


def _ppp_section(results: ResultSet, ceilings: Ceilings, top: int = 8) -> list[Section]:
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


def _scaling_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
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


def _large_batch_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
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


def _capacity_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
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


def _batch_sweep_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
    epochs = sorted(results.family(BatchEpoch), key=lambda item: (item[1].variant, item[1].batch))
    if not epochs:
        return []
    rows = [[rec.variant, str(rec.batch), f"{rec.epoch_s:.3g} s", f"{rec.images_per_s:,.0f}",
             "-" if rec.peak_mib is None else f"{rec.peak_mib:,.0f} MiB",
             f"{seeds.BATCH_EPOCH_V100[rec.batch]} s" if rec.batch in seeds.BATCH_EPOCH_V100 else "-"]
            for _, rec in epochs]
    largest = [f"largest batch that fits: {cap.largest} ({cap.stopped_by})"
               for _, cap in results.family(BatchCapacity)]
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


def _tta_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
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


def _ceilings_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
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


def _bench_table(benches: list[BenchmarkEntry], verdicts: dict[str, Verdict],
                 kept_times: dict[str, trends.Trend]) -> Table:
    """A family's benchmarks, one line each to sit beside its plots: the verdict where compared, the time
    and its spread, the trend where runs are kept."""
    head = ["benchmark", *(["verdict"] if verdicts else []), "median", "IQR/median", "rounds",
            *(["trend"] if kept_times else [])]
    rows = []
    for bench in benches:
        noise = bench.iqr / bench.median if bench.median else 0.0
        verdict = [str(verdicts.get(bench.fullname, "-"))] if verdicts else []
        kept = kept_times.get(bench.fullname)
        trend: list[document.Cell] = [_spark(kept, TIME) if kept else ""] if kept_times else []
        rows.append([bench.name, *verdict, fmt_time(bench.median), f"{noise:.1%}", str(bench.rounds), *trend])
    return Table.of(head, rows, kind="benchmarks")


def _metrics(benches: list[BenchmarkEntry]) -> list[document.Block]:
    """Every metric of a family's benchmarks, folded: too wide to sit beside a plot."""
    rows = [[b.name, ", ".join(f"{n} {fmt_value(m.value, m.unit)}" for n, m in b.metrics.items())]
            for b in benches if b.metrics]
    return [Collapsed(f"metrics of {len(rows)} benchmark(s)", (Table.of(["benchmark", "metrics"], rows),))
            ] if rows else []


#: How many of the newest kept runs a sparkline draws.
SPARK_RUNS = 20


def _spark(trend: trends.Trend, figure: str, chart: str = "") -> Spark:
    """The last ``SPARK_RUNS`` kept values of a figure as a sparkline, labelled with the first and last and
    broken where a new method of measuring it begins; ``chart``: the title of the section it links to."""
    values = tuple(v for _, v in trend.points[-SPARK_RUNS:])
    first = len(trend.points) - len(values)
    label = (f"{figure} over the last {len(values)} kept run(s): {fmt_value(values[0], trend.unit)} to "
             f"{fmt_value(values[-1], trend.unit)}" + ("; click for its chart" if chart else ""))
    return Spark(values, label, document.anchor(chart) if chart else "",
                 breaks=tuple(i - first for i in trend.breaks if i > first))


#: A family's own tables beyond its benchmarks' (sections placed under the family's).
_FAMILY_TABLES: dict[str, Callable[[ResultSet, Ceilings], list[Section]]] = {
    "test_ceilings": _ceilings_section,
    "test_ppp": _ppp_section,
    "test_data_parallel": _scaling_section,
    "test_large_batch": _large_batch_section,
    "test_capacity": _capacity_section,
    "test_batch_sweep": _batch_sweep_section,
    "test_time_to_accuracy": _tta_section,
}


def trend_rows(found: list[trends.Trend]) -> list[list[str]]:
    """benchmark, runs, first, last, change points (run, date, commit, size) and the runs a new method of
    measuring it begins at: the history table's rows."""
    return [[t.benchmark, str(len(t.points)), fmt_value(t.points[0][1], t.unit),
             fmt_value(t.points[-1][1], t.unit), _turns(t)] for t in found]


def _turns(trend: trends.Trend) -> str:
    """A trend's change points and new series in order, each run numbered as its chart numbers it."""
    return "; ".join(f"{trend.label(i)} {what}" for i, what in trend_display.turns(trend)) or "none"


def trend_charts(found: list[trends.Trend], out: Path, figure: str) -> list[Path]:
    """One PNG per trend in ``out`` (names made unique and file-safe; a figure other than the time names
    itself, so two figures of one benchmark keep two charts)."""
    prefix = "history_" if figure == TIME else f"history_{figure}_"
    charts: list[Path] = []
    for trend in found:
        slug = "".join(
            ch if ch.isalnum() or ch in "-." else "_" for ch in trend.benchmark.removeprefix("benches/")
        )
        png = next(p for i in range(len(charts) + 1)
                   if (p := out / f"{prefix}{slug[:150]}{f'_{i}' if i else ''}.png") not in charts)
        charts.append(history_chart(trend, png, figure))
    return charts


def _history_section(kept: storage_folder.History, out: Path, charted: dict[tuple[str, str], trends.Trend],
                     limit: int = 12) -> list[Section]:
    """The kept runs' trends of this hardware: a table of every benchmark's time; a chart of each row to
    read that they hold (``charted``) and of up to ``limit`` other benchmarks whose time changed, each under
    its own heading, which the rows to read link to."""
    found = trends.trends(kept.runs)
    moved = [t for t in found if t.changes and (t.benchmark, TIME) not in charted][:limit]
    wanted = [*charted.items(), *(((t.benchmark, TIME), t) for t in moved)]
    blocks: list[document.Block] = [
        Text(
            f"Time (each run's median); change points by e-divisive means on log values (permutation test p "
            f"<= {changepoints.ALPHA}); charts of the {len(charted)} row(s) to read that the kept runs hold "
            f"and of {len(moved)} other benchmark(s) that changed."
        ),
        Table.of(["benchmark", "runs", "first", "last", "change points"], trend_rows(found)),
    ]
    charts = []
    for figure in dict.fromkeys(f for (_, f), _ in wanted):
        drawn = [t for (_, f), t in wanted if f == figure]
        charts += [Section(_chart_title(trend, figure), (Image(trend.benchmark, chart),), level=3)
                   for trend, chart in zip(drawn, trend_charts(drawn, out, figure))]
    return [Section(f"History: {len(kept)} kept run(s) of {', '.join(kept.hardware_ids())}", tuple(blocks)),
            *charts]
