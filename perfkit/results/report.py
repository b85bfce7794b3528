"""Rendering: comparison tables (text, markdown, JSON), the end-of-run summary and the run report with plots.

The only module that formats or draws; everything it shows was computed elsewhere. The run report is one
list of sections (perfkit.results.document) written as markdown and as a self-contained HTML page.
"""
from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

from perfkit.results import changepoints, document, figures, history, seeds
from perfkit.results.across import HardwareRow
from perfkit.results.ceilings import Ceilings
from perfkit.results.derived import scaling_runs
from perfkit.results.document import Document, Image, Section, Table, Text, markdown_sections
from perfkit.results.judge import Comparison, Row, Verdict
from perfkit.results.metrics import MetricSpec
from perfkit.results.model import BenchmarkEntry, ResultSet
from perfkit.results.payloads import (
    FAMILIES,
    BatchCapacity,
    BatchEpoch,
    LargeBatch,
    LayerCapacity,
    Ppp,
    TimeToAccuracy,
)
from perfkit.results.plots import PLOTTERS, hardware_chart, history_chart
from perfkit.results.tables import fmt_change, fmt_time, fmt_value, text_table

FORMATS = ("table", "markdown", "json")
_QUIET = {Verdict.UNCHANGED, Verdict.INFO}
#: What each verdict word means, printed under every comparison.
VERDICT_MEANINGS = (
    "regressed/improved: beyond the minimum effect (3% for a GPU-bound benchmark, else 5%) and "
    "outside what the hardware's pooled run-to-run noise predicts, after Holm's correction; unknown: beyond "
    "it "
    "without that evidence (more runs decide: --perfkit-confirm), or slower while other processes kept a "
    "quarter "
    "of the CPUs busy; info: a figure derived from the time, shown not judged; changed: a count that should "
    "not "
    "move did, or a ratio that should stay put moved significantly; MDE: the smallest change this noise "
    "could "
    "call significant."
)


def fmt_mde(mde: float | None) -> str:
    """An MDE as a percentage; past 1000% (two baseline runs leave one degree of freedom, whose t quantile
    after Holm's correction is astronomical) the digits say nothing more."""
    if mde is None:
        return "-"
    return f"{mde:.1%}" if mde <= 10 else ">1000%"


def _row_cells(row: Row) -> list[str]:
    p = "" if row.p_value is None else f"p={row.p_value:.3g}"
    note = "; ".join(x for x in (p, row.note) if x)
    mde = fmt_mde(row.mde) if row.gating else ""
    runs = f"{row.runs[0]}/{row.runs[1]}" if row.gating else ""
    return [row.verdict.value, row.benchmark, row.figure, fmt_value(row.baseline, row.unit),
            fmt_value(row.current, row.unit), fmt_change(row.change), mde, runs, note]


_HEAD = ["verdict", "benchmark", "figure", "baseline", "current", "change", "MDE", "runs b/c", "note"]


def headline(cmp: Comparison) -> str:
    counts = ", ".join(f"{n} {v.value}" for v, n in cmp.counts().items()) or "nothing to compare"
    geo = "" if cmp.geomean_time_ratio is None else f"; geomean time ratio {cmp.geomean_time_ratio:.3f}"
    hw = (f"same hardware ({cmp.current_id})" if cmp.same_hardware
          else f"DIFFERENT hardware: baseline {cmp.baseline_id}, current {cmp.current_id}")
    return f"{hw}: {counts} (benchmarks){geo}"


def summary_lines(cmp: Comparison, baseline_name: str, limit: int = 40) -> list[str]:
    """What the terminal shows at the end of a run: the headline, then every gating figure with a verdict
    worth reading and every count that moved; benchmarks not run, informational figures and the ungated are
    counted."""
    lines = [f"perfkit: compared with {baseline_name}: {headline(cmp)}"]
    moved = [r for r in cmp.rows if r.verdict in (Verdict.REGRESSED, Verdict.IMPROVED, Verdict.UNKNOWN)
             or (r.verdict is Verdict.CHANGED and r.note.startswith("a count"))]
    if moved:
        table = text_table(_HEAD, [_row_cells(row) for row in moved[:limit]])
        lines += ["  " + line for line in table.splitlines()]
    if len(moved) > limit:
        lines.append(f"  ... and {len(moved) - limit} more; run `perfkit compare` for the whole table")
    counts = cmp.counts()
    for verdict, meaning in ((Verdict.MISSING, "in the baseline, not in this run (deselected or weekly)"),
                             (Verdict.NEW, "not in the baseline yet")):
        if counts.get(verdict):
            lines.append(
                f"  {counts[verdict]} {verdict.value} benchmark(s): {meaning}; `perfkit compare` lists them"
            )
    weak = cmp.weak()
    if weak:
        lines.append(
            f"  {len(weak)} gating figure(s) cannot detect a 10% change with these runs (MDE > 10%); "
            "more runs (baseline, kept or --perfkit-confirm) tighten them"
        )
    lines += [f"  fingerprint changed: {f} {old} -> {new}" for f, old, new in cmp.fingerprint_changes]
    if moved:
        lines.append("  " + VERDICT_MEANINGS)
    return lines


def comparison_sections(cmp: Comparison, show_unchanged: bool = True, title: str = "",
                        lead: str = "") -> list[Section]:
    """The headline, the verdict table, the across-hardware table, fingerprint differences and the weak
    figures (``lead``: a sentence before them)."""
    rows = [_row_cells(r) for r in cmp.rows if show_unchanged or r.verdict not in _QUIET]
    blocks: list[document.Block] = [Text(lead)] if lead else []
    blocks += [Text(headline(cmp)), Table.of(_HEAD, rows)]
    if cmp.hardware_rows:
        far = sum(h.far for h in cmp.hardware_rows)
        blocks += [
            Text(
                "Across hardware: speedup (baseline time / current time; a ceiling's own benchmark: current "
                "rate / baseline rate) beside the ratio of the ceiling that bounds it on each side (none for "
                f"launch-bound work, host links, or where a run names none); {far} miss it by more than "
                f"x{HardwareRow.FAR}"
            ),
            Table.of(
                ["benchmark", "speedup", "bound", "ceiling ratio", "expectation"],
                [
                    [
                        h.benchmark,
                        f"{h.speedup:.3g}x",
                        h.bound or "-",
                        "-" if h.expected is None else f"{h.expected:.3g}x",
                        "FAR from it" if h.far else "",
                    ]
                    for h in cmp.hardware_rows
                ],
            ),
        ]
    if cmp.fingerprint_changes:
        blocks += [
            Text("Fingerprint differences"),
            Table.of(
                ["field", "baseline", "current"], [[f, str(o), str(n)] for f, o, n in cmp.fingerprint_changes]
            ),
        ]
    weak = [[r.benchmark, r.figure, fmt_mde(r.mde), _tighten(r)] for r in cmp.weak()]
    if weak:
        blocks += [Text("Weak gating figures (MDE > 10%) and what would tighten them"),
                   Table.of(["benchmark", "figure", "MDE", "to tighten"], weak)]
    blocks.append(Text(VERDICT_MEANINGS))
    return [Section(title, tuple(blocks))]


def render(cmp: Comparison, fmt: str, show_unchanged: bool = True) -> str:
    """A comparison as a terminal table, markdown (a CI job summary) or JSON."""
    if fmt == "json":
        return json.dumps(cmp.to_json(), indent=2)
    sections = comparison_sections(cmp, show_unchanged)
    if fmt == "markdown":
        return markdown_sections([Section(headline(cmp), sections[0].blocks[1:])])
    parts = []
    for block in sections[0].blocks:
        parts.append(text_table(list(block.head), [[document.cell_text(c) for c in r] for r in block.rows])
                     if isinstance(block, Table)
                     else block.text if isinstance(block, Text) else "")
    return "\n\n".join(parts) + "\n"


def _tighten(row: Row) -> str:
    """What would lower a figure's minimum detectable effect."""
    if row.mde is None:
        return ("save a baseline from several runs (perfkit baseline save r1.json r2.json r3.json) or keep "
                "runs "
                "(--benchmark-autosave)")
    if row.runs[1] < 3:
        return (
            f"--perfkit-confirm 3 (this side holds {row.runs[1]} run(s)), and more kept runs of the hardware"
        )
    return "a less noisy measurement: a longer timed region, CUDA-graph or batched timing, an L2 flush"


# ---- the run report -------------------------------------------------------------------------

def write_report(results: ResultSet, out: Path, comparison: Comparison | None = None,
                 baseline_name: str = "", kept: history.History | None = None) -> Path:
    """Write ``report.md``, its PNG plots and ``report.html`` (the same sections, self-contained) into
    ``out``, and with a comparison ``verdicts.json`` (as ``perfkit compare --format json`` prints it); returns
    the markdown path."""
    out.mkdir(parents=True, exist_ok=True)
    info = results.info
    sections = [
        Section(
            "",
            (
                Text(f"profile `{info.profile}`, device `{info.device}`, {results.datetime}"),
                Table.of(["field", "value"], [[k, str(v)] for k, v in info.fingerprint.items()]),
            ),
        )
    ]
    unreadable = results.unreadable(FAMILIES)
    if unreadable:
        sections.append(Section("Records that could not be read", (
            Text("These entries keep their place in every comparison but lose their plot and table rows:"),
            Table.of(["record"], [[line] for line in unreadable]))))
    if comparison is not None:
        (out / "verdicts.json").write_text(
            render(comparison, "json"), encoding="utf-8"
        )  # what perfkit compare prints
        sections += comparison_sections(comparison, show_unchanged=False, title="Regression summary",
                                        lead=f"Against `{baseline_name}`; every verdict: `verdicts.json`.")
        chart = hardware_chart(comparison.hardware_rows, comparison.baseline_id, comparison.current_id,
                               out / "hardware.png")
        if chart is not None:
            sections.append(Section("Across hardware: measured vs expected speedup",
                                    (Image("speedup vs ceiling ratio", chart),)))
    ceilings = Ceilings.of(results)
    sections += _ceilings_section(results, ceilings)
    for plotter in PLOTTERS:
        for title, path in plotter(results, out):
            sections.append(Section(title, (Image(title, path),)))
    for family_section in (_ppp_section, _scaling_section, _large_batch_section, _capacity_section,
                           _batch_sweep_section, _tta_section):
        sections += family_section(results, ceilings)
    if kept is not None and len(kept):
        sections += _history_section(kept, out)
    for group, benches in _groups(results).items():
        sections.append(Section(group, (Table.of(["benchmark", "median", "IQR/median", "rounds", "metrics"],
                                                 [_bench_cells(b) for b in benches]),)))
    return document.write(Document(f"perfkit report: {results.hardware_id}", tuple(sections)), out)


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


def _scaling_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
    """DDP and DataParallel per workload and GPU count, with the three communication figures side by side."""
    runs = scaling_runs(results)
    if not runs:
        return []
    rows = [
        [
            r.method,
            r.workload,
            str(r.gpus),
            fmt_time(b.median),
            _cell(b, figures.IMAGES_PER_S, "{:,.0f}"),
            _cell(b, figures.SPEEDUP, "{:.2f}"),
            _cell(b, figures.SCALING_EFFICIENCY, "{:.1%}"),
            _cell(b, figures.COMPUTE_MS),
            _cell(b, figures.COMM_EXPOSED_MS),
            _cell(b, figures.NCCL_KERNEL_MS),
            _cell(b, figures.NCCL_EXPOSED_MS),
            _cell(b, figures.COMM_SUBTRACTION_MS),
            _cell(b, figures.BUSBW_RATIO, "{:.2f}"),
            _cell(b, figures.PEAK_ALLOCATED_MIB, "{:,.0f}"),
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
                    "= speedup / "
                    "GPUs. Communication three ways: the step minus the same step under `no_sync`; "
                    "torch.profiler's NCCL "
                    "kernel time per step and the part no compute kernel overlapped; the course's "
                    "subtraction (n-GPU step "
                    "minus the 1-GPU time for the same per-GPU batch)."
                ),
                Table.of(head, rows),
            ),
        )
    ]


def _large_batch_section(results: ResultSet, ceilings: Ceilings) -> list[Section]:
    runs = list(results.family(LargeBatch))
    if not runs:
        return []
    rows = []
    for bench, run in runs:
        final = run.history[-1]
        rows.append([str(run.world), str(run.global_batch), run.rule, f"{run.lr:g}", str(len(run.history)),
                     str(run.warmup_steps), f"{final.train_loss:.4g}", f"{final.train_accuracy:.1%}",
                     _cell(bench, figures.TEST_ACCURACY, "{:.1%}"), _cell(bench, figures.TRAIN_S)])
    return [
        Section(
            "Large-batch training (same epochs)",
            (
                Text(f"Data: `{runs[0][1].data}`."),
                Table.of(
                    [
                        "GPUs",
                        "global batch",
                        "rule",
                        "lr",
                        "epochs",
                        "warm-up steps",
                        "train loss",
                        "train accuracy",
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
                    f"{found[0][1].kept_mib_per_layer:.3g} MiB for "
                    f"backward. Seed 000 on a GTX 1080 Ti (10.91 GiB): {seed}; split across two: {split} "
                    f"(GPU1 ran out "
                    "first)."
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
                    f"shifted set "
                    f"`{first.shifted_data or 'none'}`. TTA: first step to the end of the evaluation that "
                    f"reached the target."
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


def _groups(results: ResultSet) -> dict[str, list[BenchmarkEntry]]:
    groups: dict[str, list[BenchmarkEntry]] = defaultdict(list)
    for bench in results.benchmarks:
        groups[bench.group or bench.fullname.split("::")[0]].append(bench)
    return dict(groups)


def _bench_cells(bench: BenchmarkEntry) -> list[str]:
    noise = bench.iqr / bench.median if bench.median else 0.0
    metrics = ", ".join(f"{n} {fmt_value(m.value, m.unit)}" for n, m in bench.metrics.items())
    return [bench.name, fmt_time(bench.median), f"{noise:.1%}", str(bench.rounds), metrics]


def trend_rows(kept: history.History, found: list[history.Trend]) -> list[list[str]]:
    """benchmark, runs, first, last, change points (run, date, commit, size): the history table's rows."""
    return [
        [
            t.benchmark,
            str(len(t.points)),
            fmt_value(t.points[0][1], t.unit),
            fmt_value(t.points[-1][1], t.unit),
            "; ".join(f"{history.run_label(kept, t.points[c.index][0])} {c.change:+.1%}" for c in t.changes)
            or "none",
        ]
        for t in found
    ]


def trend_charts(found: list[history.Trend], out: Path, figure: str) -> list[Path]:
    """One PNG per trend in ``out`` (names made unique and file-safe)."""
    charts: list[Path] = []
    for trend in found:
        slug = "".join(
            ch if ch.isalnum() or ch in "-." else "_" for ch in trend.benchmark.removeprefix("benches/")
        )
        png = next(p for i in range(len(charts) + 1)
                   if (p := out / f"history_{slug[:150]}{f'_{i}' if i else ''}.png") not in charts)
        charts.append(
            history_chart(
                trend.benchmark, trend.points, [c.index for c in trend.changes], png, figure, trend.unit
            )
        )
    return charts


def _history_section(kept: history.History, out: Path, limit: int = 12) -> list[Section]:
    """The kept runs' trends of this hardware: a table of every benchmark, charts of those that changed."""
    found = history.trends(kept)
    moved = [t for t in found if t.changes][:limit]
    blocks: list[document.Block] = [
        Text(
            f"Time (each run's median); change points by e-divisive means on log values (permutation test p "
            f"<= "
            f"{changepoints.ALPHA}); charts of the {len(moved)} benchmark(s) that changed."
        ),
        Table.of(["benchmark", "runs", "first", "last", "change points"], trend_rows(kept, found)),
    ]
    blocks += [
        Image(trend.benchmark, chart) for chart, trend in zip(trend_charts(moved, out, figures.TIME), moved)
    ]
    return [Section(f"History: {len(kept)} kept run(s) of {', '.join(kept.hardware_ids())}", tuple(blocks))]
