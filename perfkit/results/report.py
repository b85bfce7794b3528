"""Rendering: comparison tables (text, markdown, JSON), the end-of-run summary and the run report with plots.

The only module that formats or draws; everything it shows was computed elsewhere.
"""
from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfkit.measure.memory import MemoryEstimate, MiB, PeakMemory
from perfkit.parallel import scaling
from perfkit.results import datasheet
from perfkit.results.baselines import hardware_id_of, perfkit_info
from perfkit.results.compare import Comparison, Row
from perfkit.results.metrics import metrics_of
from perfkit.results.plots import PLOTTERS
from perfkit.workloads.flops import CONVENTION, FlopTable
from perfkit.workloads.paleo import Prediction

FORMATS = ("table", "markdown", "json")
_QUIET = {"unchanged"}


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"


def fmt_value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return fmt_time(value) if unit == "s" else f"{value:.4g} {unit}".strip()


def fmt_change(change: float | None) -> str:
    return "-" if change is None else f"{change:+.1%}"


def _row_cells(row: Row) -> list[str]:
    p = "" if row.p_value is None else f"p={row.p_value:.3g}"
    note = "; ".join(x for x in (p, row.note) if x)
    return [row.verdict, row.benchmark, row.metric, fmt_value(row.baseline, row.unit),
            fmt_value(row.current, row.unit), fmt_change(row.change), note]


_HEAD = ["verdict", "benchmark", "metric", "baseline", "current", "change", "note"]


def headline(cmp: Comparison) -> str:
    counts = ", ".join(f"{n} {v}" for v, n in cmp.counts().items()) or "nothing to compare"
    geo = "" if cmp.geomean_time_ratio is None else f"; geomean time ratio {cmp.geomean_time_ratio:.3f}"
    hw = (f"same hardware ({cmp.current_id})" if cmp.same_hardware
          else f"DIFFERENT hardware: baseline {cmp.baseline_id}, current {cmp.current_id}")
    return f"{hw}: {counts}{geo}"


def summary_lines(cmp: Comparison, baseline_name: str, limit: int = 40) -> list[str]:
    """What the terminal shows at the end of a run: the headline, then every row that moved."""
    lines = [f"perfkit: compared with {baseline_name}: {headline(cmp)}"]
    moved = [r for r in cmp.rows if r.verdict not in _QUIET]
    for row in moved[:limit]:
        lines.append("  " + "  ".join(c for c in _row_cells(row) if c and c != "-"))
    if len(moved) > limit:
        lines.append(f"  ... and {len(moved) - limit} more; run `perfkit compare` for the whole table")
    lines += [f"  fingerprint changed: {f} {old} -> {new}" for f, old, new in cmp.fingerprint_changes]
    return lines


def render(cmp: Comparison, fmt: str, show_unchanged: bool = True) -> str:
    if fmt == "json":
        payload = dataclasses.asdict(cmp) | {"same_hardware": cmp.same_hardware, "counts": cmp.counts()}
        return json.dumps(payload, indent=2)
    rows = [_row_cells(r) for r in cmp.rows if show_unchanged or r.verdict not in _QUIET]
    hw_rows = [[h.benchmark, f"{h.speedup:.3g}x", h.bound or "-", "-" if h.expected is None else f"{h.expected:.3g}x"]
               for h in cmp.hardware_rows]
    changes = [[f, str(o), str(n)] for f, o, n in cmp.fingerprint_changes]
    render_table = _markdown_table if fmt == "markdown" else _text_table
    parts = [("## " if fmt == "markdown" else "") + headline(cmp), render_table(_HEAD, rows)]
    if hw_rows:
        parts += ["Across hardware: speedup (baseline time / current time) beside the ceiling ratio",
                  render_table(["benchmark", "speedup", "bound", "ceiling ratio"], hw_rows)]
    if changes:
        parts += ["Fingerprint differences", render_table(["field", "baseline", "current"], changes)]
    return "\n\n".join(parts) + "\n"


def _text_table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]

    def line(cells: list[str]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _markdown_table(head: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(out + ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows])


# ---- the run report -------------------------------------------------------------------------

def write_report(results: Mapping[str, Any], out: Path, comparison: Comparison | None = None,
                 baseline_name: str = "") -> Path:
    """Write ``report.md`` and its PNG plots into ``out``; returns the markdown path."""
    out.mkdir(parents=True, exist_ok=True)
    info = perfkit_info(results)
    fp = info.get("fingerprint", {})
    lines = [f"# perfkit report: {hardware_id_of(results)}", "",
             (f"profile `{info.get('profile')}`, device `{info.get('device')}`, "
              f"{results.get('datetime', '')}"), ""]
    lines += [_markdown_table(["field", "value"], [[k, str(v)] for k, v in fp.items()]), ""]
    if comparison is not None:
        lines += ["## Regression summary", "", f"Against `{baseline_name}`.", "", render(comparison, "markdown",
                                                                                  show_unchanged=False), ""]
    lines += _ceilings_section(info)
    for plotter in PLOTTERS:
        for title, path in plotter(results, out):
            lines += [f"## {title}", "", f"![{title}]({path.name})", ""]
    lines += _ppp_section(results)
    lines += _scaling_section(results)
    lines += _large_batch_section(results)
    for group, benches in _groups(results).items():
        lines += [f"## {group}", "", _markdown_table(["benchmark", "median", "IQR/median", "rounds", "metrics"],
                                                     [_bench_cells(b) for b in benches]), ""]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _ppp_section(results: Mapping[str, Any], top: int = 8) -> list[str]:
    """Platform percent of peak per model and batch, then each model's slowest layers."""
    runs = [(b, b["extra_info"]["ppp"]) for b in results["benchmarks"] if "ppp" in b.get("extra_info", {})]
    if not runs:
        return []

    def cell(bench: Mapping[str, Any], name: str, fmt: str = "{:.3g}") -> str:
        metric = metrics_of(bench).get(name)
        return "-" if metric is None else (fmt_time(metric.value) if metric.unit == "s" else fmt.format(metric.value))

    summary = [[p["model"], str(p["batch"]), fmt_time(b["stats"]["median"]), cell(b, "tflops"),
                cell(b, "pct_of_peak", "{:.1%}"), cell(b, "predicted_s"), cell(b, "sum_of_layers_s"),
                cell(b, "launch_overhead_s"), cell(b, "conv_flop_share", "{:.2%}")] for b, p in runs]
    lines = ["## Platform percent of peak (forward)", "",
             (f"Convolutions run {runs[0][1]['precision']}, linear layers {runs[0][1]['linear_precision']}; "
             "PPP = time at the measured peaks of that math / measured time. PALEO prediction at the datasheet "
             f"peak (PPP 1). {runs[0][1]['convention']}."), "",
             _markdown_table(["model", "batch", "measured", "TFLOP/s", "PPP", "PALEO predicted", "sum of layers",
                              "launch overhead", "conv share"], summary), ""]
    for _, p in runs:
        slow = sorted(p["layers"], key=lambda r: -r["seconds"])[:top]
        rows = [[r["name"], r["type"], fmt_time(r["seconds"]), f"{r['tflops']:.3g}",
                 "-" if r["pct_of_peak"] is None else f"{r['pct_of_peak']:.1%}",
                 fmt_time(r["predicted_s"])] for r in slow]
        lines += [f"### {p['model']} batch {p['batch']}: the {top} slowest layers", "",
                  _markdown_table(["layer", "type", "time", "TFLOP/s", "PPP", "PALEO predicted"], rows), ""]
    return lines


def _scaling_section(results: Mapping[str, Any]) -> list[str]:
    """DDP and DataParallel per workload and GPU count, with the three communication figures side by side."""
    runs = scaling.runs_of(results)
    if not runs:
        return []

    def cell(run: scaling.ScalingRun, name: str, fmt: str = "{:.3g}") -> str:
        value = run.metric(name)
        return "-" if value is None else fmt.format(value)

    rows = [[r.method, r.workload, str(r.gpus), fmt_time(r.bench["stats"]["median"]), cell(r, "images_per_s", "{:,.0f}"),
             cell(r, "speedup", "{:.2f}"), cell(r, "scaling_efficiency", "{:.1%}"), cell(r, "compute_ms"),
             cell(r, "comm_exposed_ms"), cell(r, "nccl_kernel_ms"), cell(r, "nccl_exposed_ms"),
             cell(r, "comm_subtraction_ms"), cell(r, "busbw_ratio", "{:.2f}"), cell(r, "peak_allocated_mib", "{:,.0f}")]
            for r in runs]
    head = ["method", "workload", "GPUs", "step", "img/s", "speedup", "efficiency", "compute ms (no_sync)",
            "exposed comm ms (step - no_sync)", "NCCL kernel ms", "NCCL exposed ms", "course subtraction ms",
            "DDP busbw / raw", "peak MiB per GPU"]
    return ["## Data-parallel scaling", "",
            ("Speedup = images/s over the 1-GPU run of the same job in the same pytest run; efficiency = speedup / "
            "GPUs. Communication three ways: the step minus the same step under `no_sync`; torch.profiler's NCCL "
            "kernel time per step and the part no compute kernel overlapped; the course's subtraction (n-GPU step "
            "minus the 1-GPU time for the same per-GPU batch)."), "", _markdown_table(head, rows), ""]


def _large_batch_section(results: Mapping[str, Any]) -> list[str]:
    runs = [(b, b["extra_info"]["large_batch"]) for b in results["benchmarks"] if "large_batch" in b.get("extra_info", {})]
    if not runs:
        return []
    rows = []
    for bench, run in runs:
        metrics = metrics_of(bench)
        final = run["history"][-1]
        rows.append([str(run["world"]), str(run["global_batch"]), run["rule"], f"{run['lr']:g}", str(len(run["history"])), str(run["warmup_steps"]),
                     f"{final['train_loss']:.4g}", f"{final['train_accuracy']:.1%}",
                     f"{metrics['test_accuracy'].value:.1%}" if "test_accuracy" in metrics else "-",
                     fmt_time(metrics["train_s"].value) if "train_s" in metrics else "-"])
    return ["## Large-batch training (same epochs)", "", f"Data: `{runs[0][1]['data']}`.", "",
            _markdown_table(["GPUs", "global batch", "rule", "lr", "epochs", "warm-up steps", "train loss", "train accuracy",
                             "test accuracy", "train time"], rows), ""]


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
    return ["## Ceilings", "", _markdown_table(["ceiling", "measured", "datasheet", "of datasheet"], rows),
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


def render_hardware(fingerprint: Mapping[str, Any], ceilings: Mapping[str, float], stored: str) -> str:
    """``perfkit hw``: the fingerprint, stored measured ceilings and the datasheet table with sources."""
    parts = ["Fingerprint", _text_table(["field", "value"], [[k, str(v)] for k, v in fingerprint.items()])]
    if ceilings:
        parts += [f"Measured ceilings (from {stored})",
                  _text_table(["ceiling", "value"], [[k, f"{v:.4g}"] for k, v in sorted(ceilings.items())])]
    else:
        parts += [f"Measured ceilings: none stored at {stored}; run `pytest benches/test_ceilings.py`"]
    precisions = ("fp64",) + datasheet.PRECISIONS
    rows = [[s.key, s.name, f"{s.memory_gb:g}", f"{s.bandwidth_gbps:g}"]
            + [f"{s.tflops[p]:g}" if p in s.tflops else "-" for p in precisions] for s in datasheet.GPUS]
    parts += ["Datasheet peaks (dense TFLOP/s; bandwidth GB/s)",
              _text_table(["key", "name", "GB", "GB/s"] + list(precisions), rows),
              "Sources:\n" + "\n".join(f"  {s.key}: {s.source}" for s in datasheet.GPUS)]
    return "\n\n".join(parts)


def render_memory(estimate: MemoryEstimate, measured: PeakMemory | None) -> str:
    """``perfkit memory``: the estimate term by term, and the measured peak beside it when there is one."""
    rows = [[term, f"{nbytes / MiB:,.1f}"] for term, nbytes in estimate.terms().items()]
    rows.append(["total estimate", f"{estimate.total / MiB:,.1f}"])
    if measured is not None:
        rows += [["measured peak allocated", f"{measured.allocated / MiB:,.1f}"],
                 ["measured peak reserved", f"{measured.reserved / MiB:,.1f}"],
                 ["allocated / estimate", f"{measured.allocated / estimate.total:.3f}"]]
    shape = "x".join(map(str, estimate.input_shape))
    title = (f"{estimate.model}, batch {estimate.batch}, input {shape}, float32, {estimate.optimizer} "
             f"(activations: {estimate.to_json()['activations_method']})")
    return title + "\n\n" + _text_table(["term", "MiB"], rows) + "\n"


def render_flops(table: FlopTable, per_layer: bool) -> str:
    """``perfkit flops``: totals with the convention, optionally every layer with its source."""
    head = [f"{table.model}, input {'x'.join(map(str, table.input_shape))}: {CONVENTION}", "",
            _text_table(["total", "value"], [
                ["forward FLOPs", f"{table.total_flops:,}"], ["forward MACs", f"{table.total_macs:,}"],
                ["counted by FlopCounterMode (FLOPs)", f"{table.counted_flops:,}"],
                ["analytic only (ReLU, pooling, batch-norm)", f"{table.uncounted_flops:,}"],
                ["forward + backward FLOPs", f"{table.forward_backward_flops:,}"],
                ["parameters", f"{table.params:,}"], ["convolution share", f"{table.conv_flop_share:.2%}"]])]
    if per_layer:
        rows = [[r.name, r.type, "x".join(map(str, r.output_shape)), f"{r.params:,}", f"{r.flops:,}",
                 f"{r.macs:,}", f"{r.share:.2%}", r.source] for r in table.rows]
        head += ["", _text_table(["layer", "type", "output", "params", "FLOPs", "MACs", "share", "counted by"], rows)]
    return "\n".join(head) + "\n"


def render_prediction(prediction: Prediction) -> str:
    """``perfkit predict``: the predicted time with the peaks and their source."""
    p = prediction.to_json()
    lines = [(f"{p['model']} on {p['gpu_name']} ({p['precision']}, PPP {p['ppp']:g}), input "
             f"{'x'.join(map(str, p['input_shape']))}"),
             (f"  predicted forward time: {fmt_time(p['predicted_s'])} (pipelined: max of compute and memory "
             f"per layer); serial bound {fmt_time(p['predicted_serial_s'])}"),
             f"  {p['total_flops']:,} FLOPs at {p['peak_tflops']:g} TFLOP/s, {p['bandwidth_gbps']:g} GB/s",
             f"  peaks from: {p['source']}",
             f"  {CONVENTION}"]
    return "\n".join(lines) + "\n"
