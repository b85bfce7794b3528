"""Rendering: comparison tables (text, markdown, JSON), the end-of-run summary and the run report with plots.

The only module that formats or draws; everything it shows was computed elsewhere.
"""
from __future__ import annotations

import dataclasses
import json
import statistics
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfkit.results import changepoints, datasheet, history, html, seeds
from perfkit.results.baselines import hardware_id_of, perfkit_info
from perfkit.results.compare import Comparison, HardwareRow, Row
from perfkit.results.derived import ceilings_of, scaling_runs
from perfkit.results.metrics import metrics_of, value_of
from perfkit.results.payloads import (
    BatchCapacity,
    BatchEpoch,
    LargeBatch,
    LayerCapacity,
    Ppp,
    TimeToAccuracy,
    family,
)
from perfkit.results.plots import PLOTTERS, hardware_chart, history_chart
from perfkit.results.tables import fmt_change, fmt_time, fmt_value, markdown_table, text_table

FORMATS = ("table", "markdown", "json")
_QUIET = {"unchanged", "info"}
#: What each verdict word means, printed under every comparison.
VERDICT_MEANINGS = (
    "regressed/improved: beyond max(threshold, 3 x between-run spread) and significant over runs after Holm's "
    "correction; unknown: beyond that band without enough evidence (more runs decide: --perfkit-confirm), or "
    "slower while other processes kept a quarter of the CPUs busy; "
    "not gated: runs spread > 10%, reported only; info: a figure derived from the time, shown not judged; "
    "changed: a count that should not move did; MDE: the smallest change these runs could call significant."
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
    return [row.verdict, row.benchmark, row.metric, fmt_value(row.baseline, row.unit),
            fmt_value(row.current, row.unit), fmt_change(row.change), mde, runs, note]


_HEAD = ["verdict", "benchmark", "figure", "baseline", "current", "change", "MDE", "runs b/c", "note"]


def headline(cmp: Comparison) -> str:
    counts = ", ".join(f"{n} {v}" for v, n in cmp.counts().items()) or "nothing to compare"
    geo = "" if cmp.geomean_time_ratio is None else f"; geomean time ratio {cmp.geomean_time_ratio:.3f}"
    hw = (f"same hardware ({cmp.current_id})" if cmp.same_hardware
          else f"DIFFERENT hardware: baseline {cmp.baseline_id}, current {cmp.current_id}")
    return f"{hw}: {counts} (benchmarks){geo}"


def summary_lines(cmp: Comparison, baseline_name: str, limit: int = 40) -> list[str]:
    """What the terminal shows at the end of a run: the headline, then every gating figure with a verdict worth
    reading and every count that moved; benchmarks not run, informational figures and the ungated are counted."""
    lines = [f"perfkit: compared with {baseline_name}: {headline(cmp)}"]
    moved = [r for r in cmp.rows if r.verdict in ("regressed", "improved", "unknown")
             or (r.verdict == "changed" and r.note.startswith("a count"))]
    if moved:
        table = text_table(_HEAD, [_row_cells(row) for row in moved[:limit]])
        lines += ["  " + line for line in table.splitlines()]
    if len(moved) > limit:
        lines.append(f"  ... and {len(moved) - limit} more; run `perfkit compare` for the whole table")
    counts = cmp.counts()
    for verdict, meaning in (("not gated", "runs spread > 10%: reported, not gated"),
                             ("missing", "in the baseline, not in this run (deselected or weekly)"),
                             ("new", "not in the baseline yet")):
        if counts.get(verdict):
            lines.append(f"  {counts[verdict]} {verdict} benchmark(s): {meaning}; `perfkit compare` lists them")
    weak = cmp.weak()
    if weak:
        lines.append(f"  {len(weak)} gating figure(s) cannot detect a 10% change with these runs (MDE > 10%); "
                     "more baseline runs or --perfkit-confirm tighten them")
    lines += [f"  fingerprint changed: {f} {old} -> {new}" for f, old, new in cmp.fingerprint_changes]
    if moved:
        lines.append("  " + VERDICT_MEANINGS)
    return lines


def render(cmp: Comparison, fmt: str, show_unchanged: bool = True) -> str:
    if fmt == "json":
        payload = dataclasses.asdict(cmp) | {"same_hardware": cmp.same_hardware, "counts": cmp.counts(),
                                            "benchmarks": cmp.benchmark_verdicts()}
        return json.dumps(payload, indent=2)
    rows = [_row_cells(r) for r in cmp.rows if show_unchanged or r.verdict not in _QUIET]
    hw_rows = [[h.benchmark, f"{h.speedup:.3g}x", h.bound or "-", "-" if h.expected is None else f"{h.expected:.3g}x",
                "FAR from it" if h.far else ""] for h in cmp.hardware_rows]
    changes = [[f, str(o), str(n)] for f, o, n in cmp.fingerprint_changes]
    render_table = markdown_table if fmt == "markdown" else text_table
    parts = [("## " if fmt == "markdown" else "") + headline(cmp), render_table(_HEAD, rows)]
    if hw_rows:
        far = sum(h.far for h in cmp.hardware_rows)
        parts += [("Across hardware: speedup (baseline time / current time; a ceiling's own benchmark: current rate "
                   "/ baseline rate) beside the ratio of the ceiling that bounds it on each side (none for "
                   f"launch-bound work, host links, or where a run names none); {far} miss it by more than "
                   f"x{HardwareRow.FAR}"),
                  render_table(["benchmark", "speedup", "bound", "ceiling ratio", "expectation"], hw_rows)]
    if changes:
        parts += ["Fingerprint differences", render_table(["field", "baseline", "current"], changes)]
    weak = [[r.benchmark, r.metric, fmt_mde(r.mde), _tighten(r)] for r in cmp.weak()]
    if weak:
        parts += ["Weak gating figures (MDE > 10%) and what would tighten them",
                  render_table(["benchmark", "figure", "MDE", "to tighten"], weak)]
    parts.append(VERDICT_MEANINGS)
    return "\n\n".join(parts) + "\n"


def _tighten(row: Row) -> str:
    """What would lower a figure's minimum detectable effect."""
    if row.mde is None:
        return "save a baseline from several runs (perfkit baseline save r1.json r2.json r3.json)"
    if row.runs[0] < 5:
        return f"more baseline runs ({row.runs[0]} now) and --perfkit-confirm"
    return "a longer timed region, CUDA-graph or batched timing, or SM-clock-normalised time"


# ---- the run report -------------------------------------------------------------------------

def write_report(results: Mapping[str, Any], out: Path, comparison: Comparison | None = None,
                 baseline_name: str = "", kept: history.History | None = None) -> Path:
    """Write ``report.md``, its PNG plots and ``report.html`` (the same, self-contained) into ``out``; returns the
    markdown path."""
    out.mkdir(parents=True, exist_ok=True)
    info = perfkit_info(results)
    fp = info.get("fingerprint", {})
    lines = [f"# perfkit report: {hardware_id_of(results)}", "",
             (f"profile `{info.get('profile')}`, device `{info.get('device')}`, "
              f"{results.get('datetime', '')}"), ""]
    lines += [markdown_table(["field", "value"], [[k, str(v)] for k, v in fp.items()]), ""]
    if comparison is not None:
        lines += ["## Regression summary", "", f"Against `{baseline_name}`.", "", render(comparison, "markdown",
                                                                                  show_unchanged=False), ""]
        chart = hardware_chart(comparison.hardware_rows, comparison.baseline_id, comparison.current_id,
                               out / "hardware.png")
        if chart is not None:
            lines += ["## Across hardware: measured vs expected speedup", "", f"![speedup vs ceiling ratio]({chart.name})",
                      ""]
    lines += _ceilings_section(info)
    for plotter in PLOTTERS:
        for title, path in plotter(results, out):
            lines += [f"## {title}", "", f"![{title}]({path.name})", ""]
    lines += _ppp_section(results)
    lines += _scaling_section(results)
    lines += _large_batch_section(results)
    lines += _capacity_section(results)
    lines += _batch_sweep_section(results)
    lines += _tta_section(results)
    if kept is not None and len(kept):
        lines += _history_section(kept, out)
    for group, benches in _groups(results).items():
        lines += [f"## {group}", "", markdown_table(["benchmark", "median", "IQR/median", "rounds", "metrics"],
                                                     [_bench_cells(b) for b in benches]), ""]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    html.write_html(path)
    return path


def _cell(bench: Mapping[str, Any], name: str, fmt: str = "{:.3g}") -> str:
    """A metric as a table cell: times in their unit, other figures in ``fmt``; "-" where it is absent."""
    metric = metrics_of(bench).get(name)
    return "-" if metric is None else (fmt_time(metric.value) if metric.unit == "s" else fmt.format(metric.value))


def _ppp_section(results: Mapping[str, Any], top: int = 8) -> list[str]:
    """Platform percent of peak per model and batch, then each model's slowest layers."""
    runs = list(family(results, Ppp))
    if not runs:
        return []
    ceilings = ceilings_of(results)
    summary = [[p.model, str(p.batch), fmt_time(b["stats"]["median"]), _cell(b, "tflops"),
                _cell(b, "share_of_peak", "{:.1%}"), _cell(b, "predicted_s"), _cell(b, "sum_of_layers_s"),
                _cell(b, "launch_overhead_s"), _cell(b, "conv_flop_share", "{:.2%}")] for b, p in runs]
    first = runs[0][1]
    lines = ["## Platform percent of peak (forward)", "",
             (f"Convolutions run {first.precision}, linear layers {first.linear_precision}; "
              "PPP = time at the measured peaks of that math / measured time. PALEO prediction at the datasheet "
              f"peak (PPP 1). {first.convention}."), "",
             markdown_table(["model", "batch", "measured", "TFLOP/s", "PPP", "PALEO predicted", "sum of layers",
                             "launch overhead", "conv share"], summary), ""]
    for _, p in runs:
        rows = []
        for layer in sorted(p.layers, key=lambda r: -r.seconds)[:top]:
            tflops = layer.flops / layer.seconds / 1e12
            precision = p.precision_of(layer.type)
            peak = ceilings.get(datasheet.matmul_key(precision)) if precision and layer.flops else None
            rows.append([layer.name, layer.type, fmt_time(layer.seconds), f"{tflops:.3g}",
                         "-" if peak is None else f"{tflops / peak.value:.1%}", fmt_time(layer.predicted_s)])
        lines += [f"### {p.model} batch {p.batch}: the {top} slowest layers", "",
                  markdown_table(["layer", "type", "time", "TFLOP/s", "PPP", "PALEO predicted"], rows), ""]
    return lines


def _scaling_section(results: Mapping[str, Any]) -> list[str]:
    """DDP and DataParallel per workload and GPU count, with the three communication figures side by side."""
    runs = scaling_runs(results)
    if not runs:
        return []
    rows = [[r.method, r.workload, str(r.gpus), fmt_time(b["stats"]["median"]), _cell(b, "images_per_s", "{:,.0f}"),
             _cell(b, "speedup", "{:.2f}"), _cell(b, "scaling_efficiency", "{:.1%}"), _cell(b, "compute_ms"),
             _cell(b, "comm_exposed_ms"), _cell(b, "nccl_kernel_ms"), _cell(b, "nccl_exposed_ms"),
             _cell(b, "comm_subtraction_ms"), _cell(b, "busbw_ratio", "{:.2f}"),
             _cell(b, "peak_allocated_mib", "{:,.0f}")] for b, r in runs]
    head = ["method", "workload", "GPUs", "step", "img/s", "speedup", "efficiency", "compute ms (no_sync)",
            "exposed comm ms (step - no_sync)", "NCCL kernel ms", "NCCL exposed ms", "course subtraction ms",
            "DDP busbw / raw", "peak MiB per GPU"]
    return ["## Data-parallel scaling", "",
            ("Speedup = images/s over the 1-GPU run of the same job in the same results; efficiency = speedup / "
             "GPUs. Communication three ways: the step minus the same step under `no_sync`; torch.profiler's NCCL "
             "kernel time per step and the part no compute kernel overlapped; the course's subtraction (n-GPU step "
             "minus the 1-GPU time for the same per-GPU batch)."), "", markdown_table(head, rows), ""]


def _large_batch_section(results: Mapping[str, Any]) -> list[str]:
    runs = list(family(results, LargeBatch))
    if not runs:
        return []
    rows = []
    for bench, run in runs:
        final = run.history[-1]
        rows.append([str(run.world), str(run.global_batch), run.rule, f"{run.lr:g}", str(len(run.history)),
                     str(run.warmup_steps), f"{final.train_loss:.4g}", f"{final.train_accuracy:.1%}",
                     _cell(bench, "test_accuracy", "{:.1%}"), _cell(bench, "train_s")])
    return ["## Large-batch training (same epochs)", "", f"Data: `{runs[0][1].data}`.", "",
            markdown_table(["GPUs", "global batch", "rule", "lr", "epochs", "warm-up steps", "train loss",
                            "train accuracy", "test accuracy", "train time"], rows), ""]


def _capacity_section(results: Mapping[str, Any]) -> list[str]:
    found = list(family(results, LayerCapacity))
    if not found:
        return []
    rows = [[rec.knob, rec.memory, str(rec.num_conv), str(rec.num_fc),
             rec.stopped_by, str(len(rec.probes)), _cell(bench, "forward_mean_ms"),
             "-" if rec.split_at is None else _split_cell(bench, rec)] for bench, rec in found]
    seed = ", ".join(f"{c} conv + {f} fc: " + (f"{ms} ms" if ms else "out of memory")
                     for (c, f), ms in seeds.LAYER_STACK_1080TI.items())
    return ["## Layer-stack capacity (seed 000 Task 1)", "",
            (f"Input {list(found[0][1].input_shape)}; each layer keeps {found[0][1].kept_mib_per_layer:.3g} MiB for "
            f"backward. Seed 000 on a GTX 1080 Ti (10.91 GiB): {seed}; split across two: "
            + ", ".join(f"{gpu} {c} conv + {f} fc ({ms} ms)" for gpu, (c, f, ms) in seeds.LAYER_SPLIT_1080TI.items())
            + " (GPU1 ran out first)."), "",
            markdown_table(["search", "memory", "conv", "fc", "stopped by", "probes", "forward mean (ms)", "split"], rows), ""]


def _split_cell(bench: Mapping[str, Any], rec: LayerCapacity) -> str:
    """Where the two-GPU stack splits, each device's peak, and the forward by part (GPU 0, the copy, GPU 1)."""
    peaks = " / ".join(f"{m / 1024:.2f}" for m in rec.peak_mib_per_device)
    parts = " + ".join(_cell(bench, name) for name in ("gpu0_forward_ms", "transfer_ms", "gpu1_forward_ms"))
    return f"layer {rec.split_at}; peaks {peaks} GiB; GPU 0 + copy + GPU 1: {parts} ms"


def _batch_sweep_section(results: Mapping[str, Any]) -> list[str]:
    epochs = sorted(family(results, BatchEpoch), key=lambda item: (item[1].variant, item[1].batch))
    if not epochs:
        return []
    rows = [[rec.variant, str(rec.batch), f"{rec.epoch_s:.3g} s", f"{rec.images_per_s:,.0f}",
             "-" if rec.peak_mib is None else f"{rec.peak_mib:,.0f} MiB",
             f"{seeds.BATCH_EPOCH_V100[rec.batch]} s" if rec.batch in seeds.BATCH_EPOCH_V100 else "-"]
            for _, rec in epochs]
    largest = [f"largest batch that fits: {cap.largest} ({cap.stopped_by})" for _, cap in family(results, BatchCapacity)]
    return ["## Epoch time vs batch size (seeds 003 Q1, 004 2.1)", "",
            f"{epochs[0][1].model} on `{epochs[0][1].data}`; " + ("; ".join(largest) or "largest batch not searched")
            + f". Seed 003's V100 ran out of memory at {seeds.BATCH_OOM_V100}.", "",
            markdown_table(["variant", "batch", "epoch", "images/s", "peak", "seed 003 V100 epoch"], rows), ""]


def _tta_section(results: Mapping[str, Any]) -> list[str]:
    found = list(family(results, TimeToAccuracy))
    if not found:
        return []
    rows = []
    for bench, rec in found:
        reached = [r.tta_s for r in rec.runs if r.reached and r.tta_s is not None]
        median = f"{statistics.median(reached):.3g} s" if reached else "-"
        rows.append([rec.model, rec.variant, str(rec.batch), f"{len(reached)}/{len(rec.runs)}", median,
                     _cell(bench, "tta_cov", "{:.1%}"), _cell(bench, "epochs_to_target", "{:.3g}"),
                     _cell(bench, "images_per_s", "{:,.0f}"), _cell(bench, "images_per_s_vs_naive", "{:.2f}x"),
                     _cell(bench, "gpu_util_pct", "{:.0f}%"), _cell(bench, "shifted_accuracy", "{:.1%}")
                     + (f" ± {value:.1%}" if (value := value_of(bench, "shifted_accuracy_sd")) is not None else "")])
    first = found[0][1]
    return ["## Time to accuracy (seed 002 Problem 2)", "",
            (f"Data `{first.data}`, target {first.target:.0%}, at most {first.epoch_cap} epochs; shifted set "
            f"`{first.shifted_data or 'none'}`. TTA: first step to the end of the evaluation that reached the target."),
            "", markdown_table(["model", "variant", "batch", "reached", "TTA median", "CoV", "epochs", "images/s",
                                "vs naive", "GPU util", "shifted accuracy"], rows), ""]


def _ceilings_section(info: Mapping[str, Any]) -> list[str]:
    measured = info.get("ceilings") or {}
    if not measured:
        return []
    spec = datasheet.by_key(info.get("fingerprint", {}).get("datasheet_key") or "")
    rows = []
    for key, value in sorted(measured.items()):
        sheet = spec.ceiling(key) if spec else None
        rows.append([key, f"{value:.4g}", "-" if sheet is None else f"{sheet:.4g}",
                     "-" if not sheet else f"{value / sheet:.1%}"])
    source = f"Datasheet: {spec.source}." if spec else "No datasheet entry for this machine."
    return ["## Ceilings", "", markdown_table(["ceiling", "measured", "datasheet", "of datasheet"], rows),
            "", source, ""]


def _groups(results: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for bench in results["benchmarks"]:
        groups[bench.get("group") or bench["fullname"].split("::")[0]].append(bench)
    return dict(groups)


def _bench_cells(bench: Mapping[str, Any]) -> list[str]:
    stats = bench["stats"]
    noise = stats["iqr"] / stats["median"] if stats.get("median") else 0.0
    metrics = ", ".join(f"{n} {fmt_value(m.value, m.unit)}" for n, m in metrics_of(bench).items())
    return [bench["name"], fmt_time(stats["median"]), f"{noise:.1%}", str(stats["rounds"]), metrics]


def trend_rows(kept: history.History, found: list[history.Trend]) -> list[list[str]]:
    """benchmark, runs, first, last, change points (run, date, commit, size): the history table's rows."""
    return [[t.benchmark, str(len(t.points)), fmt_value(t.points[0][1], t.unit), fmt_value(t.points[-1][1], t.unit),
             "; ".join(f"{history.run_label(kept, t.points[c.index][0])} {c.change:+.1%}" for c in t.changes) or "none"]
            for t in found]


def trend_charts(found: list[history.Trend], out: Path, figure: str) -> list[Path]:
    """One PNG per trend in ``out`` (names made unique and file-safe)."""
    charts: list[Path] = []
    for trend in found:
        slug = "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in trend.benchmark.removeprefix("benches/"))
        png = next(p for i in range(len(charts) + 1)
                   if (p := out / f"history_{slug[:150]}{f'_{i}' if i else ''}.png") not in charts)
        charts.append(history_chart(trend.benchmark, trend.points, [c.index for c in trend.changes], png, figure,
                                    trend.unit))
    return charts


def _history_section(kept: history.History, out: Path, limit: int = 12) -> list[str]:
    """The kept runs' trends of this hardware: a table of every benchmark, charts of those that changed."""
    found = history.trends(kept)
    moved = [t for t in found if t.changes][:limit]
    lines = [f"## History: {len(kept)} kept run(s) of {', '.join(kept.hardware_ids())}", "",
             (f"Time (each run's median); change points by e-divisive means on log values (permutation test p <= "
             f"{changepoints.ALPHA}); charts of the {len(moved)} benchmark(s) that changed."), "",
             markdown_table(["benchmark", "runs", "first", "last", "change points"], trend_rows(kept, found)), ""]
    for chart, trend in zip(trend_charts(moved, out, "time"), moved):
        lines += [f"![{trend.benchmark}]({chart.name})", ""]
    return lines
