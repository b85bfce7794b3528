"""The ``perfkit`` command: hw, compare, baseline save, report, memory, flops, predict, roofline.

Exit codes: 0 fine, 1 a significant regression with ``compare --fail``, 2 bad input
(usage, a missing or corrupt file); errors are one line, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from perfkit.errors import PerfkitError, UsageError
from perfkit.results import baselines, compare, datasheet, derived, report

EXIT_REGRESSION = 1
EXIT_USAGE = 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except PerfkitError as exc:
        print(f"perfkit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="perfkit", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    hw = sub.add_parser("hw", help="this machine's fingerprint, hardware id and the datasheet table")
    hw.add_argument("--json", action="store_true", help="machine-readable output")
    hw.add_argument("--id", action="store_true", help="print only the hardware id (for scripts and CI)")
    hw.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    hw.set_defaults(func=_hw)

    cmp = sub.add_parser("compare", help="compare two result files (baseline first)")
    cmp.add_argument("baseline", type=Path)
    cmp.add_argument("current", type=Path)
    cmp.add_argument("--fail", action="store_true", help="exit 1 on a significant regression (noise never fails)")
    cmp.add_argument("--threshold", default="5%", help="default tolerance, e.g. 5%% or 0.05 (default 5%%)")
    cmp.add_argument("--format", choices=report.FORMATS, default="table")
    cmp.set_defaults(func=_compare)

    base = sub.add_parser("baseline", help="manage baselines/<hardware-id>.json")
    base_sub = base.add_subparsers(dest="action", required=True)
    save = base_sub.add_parser("save", help="store a results JSON as the baseline of its hardware")
    save.add_argument("results", type=Path, nargs="+",
                      help="the JSON of one run, or of several runs of the same code (fresh processes): their spread "
                           "sets each figure's noise band")
    save.add_argument("--dir", type=Path, default=None,
                      help="baseline folder (default: the project's baselines/, found from the current folder up)")
    mode = save.add_mutually_exclusive_group()
    mode.add_argument("--force", action="store_const", dest="mode", const="force", help="replace an existing one")
    mode.add_argument("--merge", action="store_const", dest="mode", const="merge",
                      help="update an existing one: same-named benchmarks replaced, others kept")
    save.set_defaults(func=_baseline_save, mode="new")

    rep = sub.add_parser("report", help="markdown report and PNG plots of a results JSON")
    rep.add_argument("results", type=Path)
    rep.add_argument("--out", type=Path, required=True, help="folder for report.md and plots")
    rep.add_argument("--baseline", type=Path, help="also compare with this baseline")
    rep.set_defaults(func=_report)

    mem = _model_command(sub, "memory", "training-memory estimate of a model, term by term (no GPU needed)",
                         _memory, "3,224,224", "C,H,W")
    mem.add_argument("--batch", type=int, required=True)
    mem.add_argument("--measure", action="store_true", help="also measure a training step's peak on the GPU")

    fl = _model_command(sub, "flops", "per-layer FLOPs and MACs of a model (FlopCounterMode + PALEO formulas)",
                        _flops, "1,3,224,224", "N,C,H,W")
    fl.add_argument("--per-layer", action="store_true", help="print every layer, not only the totals (--json always)")

    pr = _model_command(sub, "predict", "PALEO-style inference time from FLOPs and datasheet peaks",
                        _predict, "3,224,224", "C,H,W")
    pr.add_argument("--gpu", required=True, help="datasheet key or device name, e.g. k80, v100-sxm2, h200")
    pr.add_argument("--precision", default="fp32", help="fp32 or fp64 (or tf32/bf16/fp16 where listed)")
    pr.add_argument("--ppp", type=float, default=1.0, help="platform percent of peak in (0, 1] (default 1.0)")
    pr.add_argument("--batch", type=int, default=1)

    roof = sub.add_parser("roofline", help="draw the roofline chart of a results JSON's PPP benchmarks")
    roof.add_argument("results", type=Path)
    roof.add_argument("--out", type=Path, required=True, help="PNG file to write")
    roof.set_defaults(func=_roofline)
    return parser


def _model_command(sub: Any, name: str, help_text: str, func: Callable[[argparse.Namespace], int],
                   default_input: str, dims: str) -> argparse.ArgumentParser:
    """A subcommand about one model: the model argument, its input shape and --json."""
    parser = sub.add_parser(name, help=help_text)
    parser.add_argument("model", help="a registered model name or package.module:function")
    parser.add_argument("--input", default=default_input, metavar=dims, help=f"input shape (default {default_input})")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=func)
    return parser


def _hw(args: argparse.Namespace) -> int:
    from perfkit import console  # renders torch-side objects: imported only by the commands that need them
    from perfkit.measure import hardware  # imports torch (seconds); only this command needs it

    fp = hardware.fingerprint(hardware.resolve_device(args.device))
    if args.id:
        print(fp.hardware_id)
        return 0
    store = baselines.BaselineStore.find(Path.cwd())
    stored, ceilings = store.path_for(fp.hardware_id), store.ceilings(fp.hardware_id)
    table = [dict(vars(spec)) for spec in datasheet.GPUS]
    if args.json:
        print(json.dumps({"fingerprint": fp.to_json(), "stored_ceilings": ceilings, "datasheet": table}, indent=2))
        return 0
    print(console.render_hardware(fp.to_json(), ceilings, str(stored)))
    return 0


def _load(path: Path, baseline: dict[str, Any] | None = None) -> dict[str, Any]:
    """A result file with its cross-benchmark figures derived as the run derives them (perfkit.results.derived);
    a baseline of the same hardware lends the ceilings a run did not measure."""
    results = baselines.load_results(path)
    same = baseline is not None and baselines.hardware_id_of(baseline) == baselines.hardware_id_of(results)
    return dict(derived.derive(results, derived.measured_ceilings(baseline) if same and baseline else None))


def _noise_for(baseline: dict[str, Any], current: dict[str, Any]) -> dict[str, Any] | None:
    """Where the baseline file holds no between-run spread, the stored baseline of that hardware lends its own."""
    if baselines.perfkit_info(baseline).get("noise") or baselines.hardware_id_of(baseline) != baselines.hardware_id_of(
            current):
        return None
    return baselines.BaselineStore.find(Path.cwd()).load(baselines.hardware_id_of(baseline))


def _compare(args: argparse.Namespace) -> int:
    policy = compare.Policy(threshold=compare.parse_threshold(args.threshold))
    baseline = _load(args.baseline)
    current = _load(args.current, baseline)
    result = compare.compare(baseline, current, policy, noise=_noise_for(baseline, current))
    print(report.render(result, args.format), end="")
    if args.fail and result.regressions:
        names = sorted({r.benchmark for r in result.regressions})
        print(f"perfkit: {len(names)} benchmark(s) regressed: {', '.join(names)}", file=sys.stderr)
        return EXIT_REGRESSION
    return 0


def _baseline_save(args: argparse.Namespace) -> int:
    store = baselines.BaselineStore(args.dir) if args.dir else baselines.BaselineStore.find(Path.cwd())
    results = [baselines.load_results(path) for path in args.results]
    path = store.save(baselines.from_runs(results) if len(results) > 1 else results[0], args.mode)
    print(f"perfkit: saved {path} ({len(results)} run{'s' if len(results) > 1 else ''})")
    return 0


def _report(args: argparse.Namespace) -> int:
    baseline = _load(args.baseline) if args.baseline else None
    results = _load(args.results, baseline)
    comparison = None
    if baseline is not None:
        comparison = compare.compare(baseline, results)
    path = report.write_report(results, args.out, comparison, str(args.baseline or ""))
    print(f"perfkit: wrote {path}")
    return 0


def _memory(args: argparse.Namespace) -> int:
    from perfkit import console  # renders torch-side objects: imported only by the commands that need them
    from perfkit.measure.memory import MiB
    from perfkit.workloads import models  # imports torch (seconds)
    from perfkit.workloads.estimate import estimate_training_memory, measure_training_peak

    estimate = estimate_training_memory(args.model, args.batch, models.parse_shape(args.input, 3))
    measured = measure_training_peak(args.model, args.batch, estimate.input_shape) if args.measure else None
    if args.json:
        payload = estimate.to_json()
        if measured is not None:
            payload["measured"] = {"peak_allocated_mib": measured.allocated / MiB,
                                   "peak_reserved_mib": measured.reserved / MiB,
                                   "actual_over_estimate": measured.allocated / estimate.total}
        print(json.dumps(payload, indent=2))
    else:
        print(console.render_memory(estimate, measured))
    return 0


def _flops(args: argparse.Namespace) -> int:
    from perfkit import console  # renders torch-side objects: imported only by the commands that need them
    from perfkit.workloads import flops, models

    table = flops.flop_table(args.model, models.parse_shape(args.input, 4))
    if args.json:
        print(json.dumps(table.to_json(per_layer=True), indent=2))
    else:
        print(console.render_flops(table, args.per_layer))
    return 0


def _predict(args: argparse.Namespace) -> int:
    from perfkit import console  # renders torch-side objects: imported only by the commands that need them
    from perfkit.workloads import flops, models, paleo

    if args.batch < 1:
        raise UsageError(f"batch must be at least 1, not {args.batch}")
    spec = paleo.gpu_spec(args.gpu)
    table = flops.flop_table(args.model, (args.batch, *models.parse_shape(args.input, 3)))
    prediction = paleo.predict(table, spec, args.precision, args.ppp)
    if args.json:
        print(json.dumps(prediction.to_json(per_layer=True), indent=2))
    else:
        print(console.render_prediction(prediction))
    return 0


def _roofline(args: argparse.Namespace) -> int:
    from perfkit.results import plots

    path = plots.roofline_chart(_load(args.results), args.out)
    if path is None:
        raise UsageError(f"{args.results} holds no roofline points; run benches/test_ppp.py on a GPU first")
    print(f"perfkit: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
