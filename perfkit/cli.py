"""The ``perfkit`` command: hw, compare, baseline save, history, dashboard, report, memory, flops, predict,
roofline, ab, bisect.

Exit codes: 0 fine, 1 a significant regression with ``compare --fail`` or ``ab --fail``, 2 bad input
(usage, a missing or corrupt file); errors are one line, never a traceback. ``ab`` and ``bisect`` stopped
midway by Ctrl-C or SIGTERM clean up, say what they kept in one line and exit as a shell reports the
signal (130, 143).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from perfkit import stopping
from perfkit.errors import BaselineError, PerfkitError, UsageError
from perfkit.render import report, tables
from perfkit.resultfile import datasheet, figures, load, partial
from perfkit.resultfile.model import PROFILES, BenchmarkEntry, ResultSet, machine_kind
from perfkit.store import baselines, kept_noise, storage_folder
from perfkit.verdict import trends
from perfkit.verdict.expected import NoModel, Work
from perfkit.verdict.judge import MIN_BASELINE_RUNS, Comparison, Policy, judge

EXIT_REGRESSION = 1
EXIT_USAGE = 2
#: Options whose value may look like an option (a negative number).
VALUE_OPTIONS = ("--threshold", "--ppp", "--batch")
NEGATIVE = re.compile(r"^-[0-9.]")
DB_HELP = ("a history database's URL (what `perfkit history ingest` stores into): sqlite:///history.db or "
           "postgresql://user@host/dbname")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(_values_may_start_with_minus(sys.argv[1:] if argv is None else list(argv)))
    try:
        return int(args.func(args))
    except stopping.Stopped as stop:  # ab, bisect: their cleanup has run
        print(f"perfkit: stopped by {stop.signal_name}: {stop.kept}", file=sys.stderr)
        return stop.status
    except PerfkitError as exc:
        print(f"perfkit: error: {exc}", file=sys.stderr)
    except OSError as exc:  # a folder that cannot be made, a file that cannot be written, a full disk
        where = f": {exc.filename}; choose another path" if exc.filename else ""
        print(f"perfkit: error: {exc.strerror or exc}{where}", file=sys.stderr)
    return EXIT_USAGE


def _version() -> str:
    """The installed package's version (a source tree that is not installed says so), and the commit of the
    checkout it runs from, where it runs from one: a version number alone does not say which code ran."""
    try:
        version = metadata.version("perfkit")
    except metadata.PackageNotFoundError:
        version = "(not installed: pip install -e .)"
    commit = _checkout_commit(Path(__file__).resolve().parent.parent)
    return f"{version} ({commit})" if commit else version


def _checkout_commit(root: Path) -> str:
    """``commit 0123456789`` of the git checkout at ``root`` (``, with uncommitted changes`` where its tracked
    files differ); "" where ``root`` is no checkout's top folder (an installed copy) or git is missing."""
    if not (root / ".git").exists():
        return ""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=root, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return f"commit {head}{', with uncommitted changes' if dirty else ''}"


class _VersionAction(argparse.Action):
    """``--version``, found only when asked: it may run git, which no other command should wait for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print perfkit's version, and its git commit where it runs from a checkout")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"perfkit {_version()}")
        parser.exit()


def _values_may_start_with_minus(argv: list[str]) -> list[str]:
    """``--threshold -5%`` as ``--threshold=-5%``: argparse would take ``-5%`` for an option and say only
    "expected one argument"; joined, the value reaches its own check, which says what is wrong with it."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in VALUE_OPTIONS and NEGATIVE.match(arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def _parser() -> argparse.ArgumentParser:
    summary = " ".join(__doc__.split("\n\n")[0].split()).replace("``", "")  # plain text for a terminal
    parser = argparse.ArgumentParser(prog="perfkit", description=summary)
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)

    hw = sub.add_parser("hw", help="this machine's fingerprint, hardware id and the datasheet table")
    hw.add_argument("--json", action="store_true", help="machine-readable output")
    hw.add_argument("--id", action="store_true", help="print only the hardware id (for scripts and CI)")
    hw.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                    help="the device to describe (default: a GPU where one is visible, else the CPU)")
    hw.set_defaults(func=_hw)

    cmp = sub.add_parser("compare", help="compare two result files (baseline first)")
    cmp.add_argument("baseline", type=Path, help="the reference: a baseline in baselines/ or any result file")
    cmp.add_argument("current", type=Path, help="the run to judge (pytest --benchmark-json's file)")
    cmp.add_argument(
        "--fail", action="store_true", help="exit 1 on a significant regression (noise never fails)"
    )
    cmp.add_argument("--threshold", default=None,
                     help="one minimum effect for every figure, e.g. 5%% or 0.05 (default: 3%% for "
                          "GPU-bound benchmarks, 5%% for the rest)")
    kept = cmp.add_mutually_exclusive_group()
    kept.add_argument("--history", default=None, metavar="DIR",
                      help="pytest-benchmark storage whose kept runs of the baseline's hardware add to the "
                           "noise (default: .benchmarks, found from the current folder up, where it exists)")
    kept.add_argument("--db", default=None, metavar="URL",
                      help=f"instead of --history: {DB_HELP}, whose runs of the baseline's hardware "
                           "add to the noise")
    cmp.add_argument("--format", choices=report.FORMATS, default="table",
                     help="the table for a terminal, markdown (a CI job summary) or json (for scripts; the "
                          "rows and counts)")
    cmp.set_defaults(func=_compare)

    base = sub.add_parser("baseline", help="manage baselines/<hardware-id>.json")
    base_sub = base.add_subparsers(dest="action", required=True)
    save = base_sub.add_parser("save", help="store a results JSON as the baseline of its hardware")
    save.add_argument(
        "results",
        type=Path,
        nargs="*",
        help="the JSON of one run, or of several runs of the same code (fresh processes): their spread "
        "sets each figure's noise band",
    )
    where = save.add_mutually_exclusive_group()
    where.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="baseline folder (default: the project's baselines/, found from the current folder up)",
    )
    where.add_argument("--local", action="store_true",
                       help="save it as this machine's own baseline, in the project's .perfkit/baselines/ "
                            "(not committed), which later runs here are judged against before baselines/")
    mode = save.add_mutually_exclusive_group()
    mode.add_argument(
        "--force", action="store_const", dest="mode", const="force", help="replace an existing one"
    )
    mode.add_argument("--merge", action="store_const", dest="mode", const="merge",
                      help="update an existing one: same-named benchmarks replaced, others kept")
    mode.add_argument("--append", action="store_const", dest="mode", const="append",
                      help="add these runs to an existing one's: same-named benchmarks keep every run of "
                           "both (more runs, a sharper noise estimate), others kept")
    save.set_defaults(func=_baseline_save, mode="new")
    save.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        help="save only these benchmarks (full names, * and ? as wildcards): with --merge, re-save one "
        "family whose measurement changed and keep the rest",
    )
    save.add_argument(
        "--from-history",
        type=int,
        metavar="N",
        help="build it from the last N runs kept by pytest --benchmark-autosave instead of files",
    )
    source = save.add_mutually_exclusive_group()
    source.add_argument(
        "--storage",
        default=None,
        metavar="DIR",
        help="with --from-history: pytest-benchmark's storage folder (default: .benchmarks, found from "
        "the current folder up)",
    )
    source.add_argument("--db", default=None, metavar="URL",
                        help=f"with --from-history, instead of --storage: {DB_HELP}")
    save.add_argument(
        "--hardware-id",
        default=None,
        help="with --from-history: the machine whose runs to use (needed when the storage holds several)",
    )
    save.add_argument("--profile", choices=PROFILES, default=None,
                      help="with --from-history: the size profile whose runs to use (needed when "
                           "there are both)")

    drop = base_sub.add_parser(
        "drop", help="retire benchmarks from a baseline: an id renamed or removed on purpose"
    )
    drop.add_argument("baseline", type=Path, help="the baseline file, e.g. baselines/nvidia-h200-x1.json")
    drop.add_argument("names", nargs="+", metavar="NAME",
                      help="a benchmark's full name as the verdict lists it, or a glob of full names")
    drop.set_defaults(func=_baseline_drop)

    hist = sub.add_parser(
        "history", help="trends and change points of the runs kept by pytest --benchmark-autosave",
        usage="perfkit history [--storage DIR | --db URL] [--hardware-id ID] [--profile {full,quick}] "
              "[-k PATTERN] [--figure FIGURE] [--out DIR]\n"
              "       perfkit history ingest RESULTS.json [RESULTS.json ...] --db URL",
    )
    source = hist.add_mutually_exclusive_group()
    source.add_argument(
        "--storage",
        default=None,
        metavar="DIR",
        help="pytest-benchmark's storage folder, DIR or file://DIR (default: .benchmarks, found from the "
        "current folder up)",
    )
    source.add_argument("--db", default=None, metavar="URL", help=f"instead of --storage: {DB_HELP}")
    hist.add_argument("--hardware-id", default=None, metavar="ID",
                      help="only the runs of this machine (needed when there are several)")
    hist.add_argument("--profile", choices=PROFILES, default=None,
                      help="only the runs of this size profile (needed when there are both)")
    hist.add_argument(
        "-k",
        dest="pattern",
        default="*",
        metavar="PATTERN",
        help="benchmarks whose full name contains PATTERN, or matches it as a glob (default: all)",
    )
    hist.add_argument("--figure", default=figures.TIME,
                      help="time (each run's median) or a metric name, e.g. bandwidth_gbps (default: time)")
    hist.add_argument("--out", type=Path, default=None, metavar="DIR",
                      help="also write one PNG per benchmark into this folder")
    hist.set_defaults(func=_history)
    hist_sub = hist.add_subparsers(dest="history_action", title="commands", metavar="ingest")
    ingest = hist_sub.add_parser(
        "ingest", prog="perfkit history ingest",
        help="store result files in a history database, once each (several runners may at once)"
    )
    ingest.add_argument("results", type=Path, nargs="+", metavar="RESULTS.json",
                        help="result files written by pytest --benchmark-json or --benchmark-autosave")
    ingest.add_argument("--db", required=True, metavar="URL", help=f"{DB_HELP}; made where it does not exist")
    ingest.set_defaults(func=_history_ingest)

    dash = sub.add_parser("dashboard", help="static pages of a history database: each benchmark's latest "
                                            "verdict, trend, runs and speedups across hardware")
    dash.add_argument("--db", required=True, metavar="URL", help=DB_HELP)
    dash.add_argument("--out", type=Path, required=True, metavar="DIR",
                      help="folder for index.html and the benchmark pages (made where it does not exist)")
    dash.set_defaults(func=_dashboard)

    rep = sub.add_parser(
        "report", help="markdown report, PNG plots and one self-contained HTML page of a results JSON"
    )
    rep.add_argument("results", type=Path, metavar="RESULTS.json",
                     help="the run to report: pytest --benchmark-json's file, a baseline or a .partial file")
    rep.add_argument("--out", type=Path, required=True, metavar="DIR",
                     help="folder for report.md, report.html and the plots (made where it does not exist)")
    rep.add_argument("--baseline", type=Path, help="also compare with this baseline")
    rep.add_argument("--threshold", default=None, help="with --baseline: the minimum effect, as for compare")
    kept = rep.add_mutually_exclusive_group()
    kept.add_argument(
        "--history",
        default=None,
        metavar="DIR",
        help="also the trends and change points of the runs kept in this pytest-benchmark storage "
        "(runs of the results' hardware); with --baseline they add to the noise, as for compare",
    )
    kept.add_argument("--db", default=None, metavar="URL", help=f"as --history, from {DB_HELP}")
    rep.set_defaults(func=_report)

    mem = _model_command(sub, "memory", "training-memory estimate of a model, term by term (no GPU needed)",
                         _memory, batch_required=True)
    mem.add_argument("--measure", action="store_true", help="also measure a training step's peak on the GPU")

    fl = _model_command(
        sub, "flops", "per-layer FLOPs and MACs of a model (FlopCounterMode + PALEO formulas)", _flops
    )
    fl.add_argument(
        "--per-layer", action="store_true", help="print every layer, not only the totals (--json always)"
    )

    pr = _model_command(sub, "predict", "PALEO-style inference time of one model from FLOPs and datasheet "
                                        "peaks; with --device, a benchmark family's times on a device",
                        _predict, model_required=False)
    pr.add_argument("--gpu", help="datasheet key or device name, e.g. k80, v100-sxm2, h200")
    pr.add_argument("--precision", default="fp32", help="fp32 or fp64 (or tf32/bf16/fp16 where listed)")
    pr.add_argument("--ppp", type=float, default=1.0, help="platform percent of peak in (0, 1] (default 1.0)")
    pr.add_argument("--device", metavar="KEY|RESULTS.json",
                    help="instead of MODEL --gpu: a datasheet key (b200, a100-80gb, ...: its times "
                         "predicted) or a result file (a device measured: the model checked against it), for "
                         "a benchmark family measured on a device at hand, with the model's error there")
    pr.add_argument("--family", metavar="NAME",
                    help="with --device: the benchmark family, its bench file's stem (test_ppp); default all")
    pr.add_argument("--from", dest="at_hand", type=Path, action="append", metavar="RESULTS.json",
                    help="with --device, once or more: the results measured at hand (default: the baselines "
                         "of one-GPU machines in baselines/); the one holding most of the family is "
                         "predicted from, each other measures the model's error")

    roof = sub.add_parser("roofline", help="draw the roofline chart of a results JSON's PPP benchmarks")
    roof.add_argument("results", type=Path, metavar="RESULTS.json",
                      help="a result file holding PPP benchmarks (benches/test_ppp.py, run on a GPU)")
    roof.add_argument("--out", type=Path, required=True, help="PNG file to write")
    roof.set_defaults(func=_roofline)

    abp = sub.add_parser("ab", help="A/B two git refs: their benchmarks in alternating fresh processes, a "
                                    "paired verdict per benchmark")
    abp.add_argument("base", help="the git ref measured as A")
    abp.add_argument("head", nargs="?", default=None,
                     help="the git ref measured as B (default: the working tree as it is, uncommitted "
                          "changes included)")
    benches = _ab_options(abp, False, "pytest -k expression selecting the benchmarks (default: all)")
    benches.add_argument("--touched", action="store_true",
                         help="instead of --benches: only the bench files the change from BASE to HEAD "
                              "touches, all of them where it changes perfkit/ or the pytest configuration, "
                              "none where it changes no benchmark's code")
    abp.add_argument("--out", type=Path, default=None,
                     help="folder for base.json, head.json and ab.json (default: a new temporary folder)")
    abp.add_argument("--seed", type=int, default=None,
                     help="seed of the ABBA order (default: random, recorded)")
    abp.add_argument("--fail", action="store_true",
                     help="exit 1 when a benchmark regressed (an unknown verdict never fails)")
    abp.add_argument("--format", choices=("table", "markdown"), default="table",
                     help="the table for a terminal, or markdown (a CI job summary); progress goes to stderr")
    abp.set_defaults(func=_ab)

    bis = sub.add_parser("bisect", help="git bisect a benchmark's regression, each commit A/B'd against GOOD")
    bis.add_argument("good", help="a git ref where the benchmark is fine")
    bis.add_argument("bad", help="a later git ref where it regressed")
    _ab_options(bis, True, "pytest -k expression selecting the benchmark")
    bis.add_argument("--out", type=Path, default=None,
                     help="folder for each step's A/B (default: a new temporary folder)")
    bis.set_defaults(func=_bisect)
    return parser


def _ab_options(parser: argparse.ArgumentParser, required: bool, help_text: str) -> Any:
    """The options ab and bisect share; returns the group --benches is in, for options that replace it."""
    parser.add_argument("-k", dest="expr", required=required, metavar="EXPR", help=help_text)
    parser.add_argument("--rounds", type=int, default=10,
                        help="most pairs to run, the budget each figure's alpha is spent over; fewer when "
                             "every benchmark is decided sooner (default 10)")
    benches = parser.add_mutually_exclusive_group()
    benches.add_argument("--benches", nargs="+", default=["benches"], metavar="PATH",
                         help="the bench folders or files, relative to each checkout (default: benches)")
    return benches


def _model_command(sub: Any, name: str, help_text: str, func: Callable[[argparse.Namespace], int],
                   batch_required: bool = False, model_required: bool = True) -> argparse.ArgumentParser:
    """A subcommand about one model: the model, one image's shape (C,H,W), the batch and --json; the same
    convention for every model command."""
    parser = sub.add_parser(name, help=help_text)
    parser.add_argument("model", nargs=None if model_required else "?",
                        help="a registered model name or package.module:function")
    parser.add_argument("--input", default="3,224,224", metavar="C,H,W",
                        help="one image's shape, channels first (default 3,224,224); the batch is --batch")
    parser.add_argument("--batch", type=int, required=batch_required, default=None if batch_required else 1,
                        help="images per batch" + ("" if batch_required else " (default 1)"))
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=func)
    return parser


def _hw(args: argparse.Namespace) -> int:
    from perfkit.measure import hardware  # its fingerprint imports torch (seconds); the id of a CPU does not

    if args.id:
        print(hardware.hardware_id_here(args.device))
        return 0
    from perfkit import console  # renders torch-side objects: imported only by the commands that need them

    fp = hardware.fingerprint(hardware.resolve_device(args.device))
    kind = machine_kind(fp.device, fp.to_json())
    stored = baselines.BaselineStore.find(Path.cwd()).machine_ceilings(fp.hardware_id, kind)
    table = [dict(vars(spec)) for spec in datasheet.GPUS]
    if args.json:
        print(json.dumps({"fingerprint": fp.to_json(), "stored_ceilings": stored.ceilings.own(),
                          "stored_ceilings_from": str(stored.path), "stored_ceilings_of": stored.whose,
                          "datasheet": table}, indent=2))
        return 0
    print(console.render_hardware(fp.to_json(), stored))
    return 0


def parse_threshold(text: str) -> float:
    """'5%' or '0.05' -> 0.05; anything else is a usage error that shows the accepted forms."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise UsageError(f"threshold {text!r} is not a number; write it as 5% or 0.05") from None
    if not raw.endswith("%") and value >= 1:
        raise UsageError(f"threshold {text!r} is ambiguous; write 5% or 0.05")
    if not math.isfinite(value):
        raise UsageError(f"threshold {text!r} is not a number; write it as 5% or 0.05")
    if value < 0:
        raise UsageError(f"threshold {text!r} is negative: a tolerance is a size, not a direction; use a "
                         "fraction such as 5% or 0.05")
    if value >= 10:
        raise UsageError(f"threshold {text!r} is out of range: a tolerance below 1000% (10) is a size worth "
                         "a verdict; use a fraction such as 5% or 0.05")
    return value


def judge_files(baseline_path: Path, current_path: Path, threshold: str | None,
                storage: Path | None = None,
                db: str | None = None) -> tuple[ResultSet, ResultSet, Comparison]:
    """Both files read by the one loader (the baseline lends the ceilings the results did not measure, where
    it is of the same machine) and judged as the end of a run judges them: the same noise (the baselines
    folder and the kept runs of ``storage``, default pytest-benchmark's ``.benchmarks``, or of the history
    database ``db``), the same policy."""
    policy = Policy.with_threshold(None if threshold is None else parse_threshold(threshold))
    baseline = read(baseline_path)
    current = read(current_path, baseline)
    if baseline.profile != current.profile:
        raise UsageError(f"the baseline holds the {baseline.profile} profile's sizes, the results the "
                         f"{current.profile} profile's; compare runs of the same profile")
    kept = (storage_folder.storage_path(storage) if storage is not None
            else storage_folder.find_storage(Path.cwd()))
    judged_with = kept_noise.for_judging(baseline, current, baselines.BaselineStore.find(Path.cwd()), kept,
                                         db)
    return baseline, current, judge(baseline, current, judged_with, policy, work_of)


def read(path: Path, lender: ResultSet | None = None) -> ResultSet:
    """A result file by the one loader (perfkit.resultfile.load); a run cut short is said on stderr, since
    what it shows covers only the benchmarks that run finished."""
    results = load.load(path, lender)
    _say_partial(results)
    return results


def _say_partial(results: ResultSet) -> None:
    line = partial.said(results)
    if line:
        print(f"perfkit: {line}", file=sys.stderr)


def work_of(bench: BenchmarkEntry, results: ResultSet) -> Work | NoModel:
    """A benchmark's work as the roofline model counts it (perfkit.workloads.benchwork), for comparisons
    across hardware: it imports torch, so only a comparison of two machines loads it."""
    from perfkit.workloads import benchwork

    return benchwork.work_of(bench, results)


def _compare(args: argparse.Namespace) -> int:
    _, _, result = judge_files(args.baseline, args.current, args.threshold, args.history, args.db)
    print(report.render(result, args.format, width=tables.terminal_width()), end="")
    return _failed([r.benchmark for r in result.regressions]) if args.fail else 0


def _baseline_save(args: argparse.Namespace) -> int:
    store = baselines.BaselineStore(args.dir) if args.dir else baselines.BaselineStore.find(Path.cwd())
    store = store.local if args.local else store
    if args.from_history is not None:
        return _baseline_save_from_history(args, store)
    if args.db or args.profile:
        raise UsageError("--db and --profile choose the runs of --from-history N; pass it too")
    if not args.results:
        raise UsageError("baseline save needs the result JSON of one or more runs, or --from-history N")
    if args.only and args.mode not in ("merge", "append"):
        raise UsageError("--only keeps the rest of an existing baseline: use it with --merge or --append")
    results = []
    for path in args.results:
        kept, injected = baselines.without_injected(read(path))
        if injected:
            print(f"perfkit: left out {len(injected)} benchmark(s) of {path} that carry an injected slowdown")
        results.append(baselines.select(kept, args.only) if args.only else kept)
    path = store.save(baselines.from_runs(results) if len(results) > 1 else results[0], args.mode)
    print(f"perfkit: saved {path} ({len(results)} run{'s' if len(results) > 1 else ''})")
    _say_busy(results)
    if args.local and args.mode in ("new", "force") and len(results) < MIN_BASELINE_RUNS:
        print(f"perfkit: its figures are judged once it holds {MIN_BASELINE_RUNS} runs of them; add runs "
              "with `perfkit baseline save RUN.json --local --append`, or save with `pytest benches/ "
              f"--perfkit-save-baseline={baselines.LOCAL_SAVE}`, which re-runs them")
    return 0


def _say_busy(runs: Sequence[ResultSet]) -> None:
    """Warn, without refusing, of each saved run recorded on a busy host (baselines.busy_warning)."""
    for run in runs:
        warning = baselines.busy_warning(run)
        if warning:
            print(f"perfkit: {warning}", file=sys.stderr)


def _baseline_save_from_history(args: argparse.Namespace, store: baselines.BaselineStore) -> int:
    if args.results:
        raise UsageError("pass result files or --from-history N, not both")
    if args.only:
        raise UsageError("--only selects from result files; --from-history saves every benchmark of the runs")
    if args.db:
        from perfkit.store import database  # SQLAlchemy: imported only where a database is named

        storage_folder.enough_runs(args.from_history)
        with database.open_store(args.db) as db:
            where, kept = db.where, db.history(args.hardware_id, args.profile)
        _say_skipped(kept)
        baseline = storage_folder.baseline_of(kept, where, args.hardware_id, args.from_history)
    else:
        storage = (storage_folder.storage_path(args.storage) if args.storage
                   else storage_folder.find_storage(Path.cwd()))
        where = str(storage)
        baseline = storage_folder.baseline_from_history(storage, args.hardware_id, args.from_history,
                                                        args.profile)
    path = store.save(baseline, args.mode)
    print(f"perfkit: saved {path} (the last {args.from_history} runs in {where})")
    _say_busy([baseline])
    return 0


def _baseline_drop(args: argparse.Namespace) -> int:
    if args.baseline.name.endswith(partial.SUFFIX):
        raise UsageError(f"{args.baseline} holds a run cut short; drop from a baseline file, which "
                         "`perfkit baseline save` writes")
    kept, dropped = baselines.drop(load.load(args.baseline), args.names)
    baselines.write_atomically(args.baseline, kept)
    print(f"perfkit: dropped {len(dropped)} benchmark(s) from {args.baseline}; {len(kept.benchmarks)} kept")
    for name in dropped:
        print(f"  {name}")
    return 0


def _history(args: argparse.Namespace) -> int:
    """Per benchmark: first and last run value, the number of runs and each change point (e-divisive
    means)."""
    from perfkit.verdict import changepoints

    storage, kept = _kept_runs(args.storage, args.hardware_id, args.db, args.profile)
    found = trends.trends(kept.runs, args.pattern, args.figure)
    if not found:
        raise UsageError(f"no stored benchmark matches -k {args.pattern!r} with a figure {args.figure!r}")
    print(f"{args.figure} over {len(kept)} stored run(s) of {', '.join(kept.hardware_ids())} in {storage} "
          f"(change points: e-divisive means on log values, permutation test p <= {changepoints.ALPHA})")
    print(
        tables.text_table(
            ["benchmark", "runs", "first", "last", "change points"], report.trend_rows(found),
            tables.terminal_width()
        )
    )
    if args.out is not None:
        charts = report.trend_charts(found, args.out, args.figure)
        print(f"perfkit: wrote {len(charts)} chart(s) to {args.out}")
    return 0


def _kept_runs(storage_option: str | None, hardware_id: str | None, db: str | None = None,
               profile: str | None = None) -> tuple[str, storage_folder.History]:
    """The runs kept in pytest-benchmark's storage, or in the history database ``db``, of one machine and
    profile, and where they were; skipped files are said on stderr."""
    if db is not None:
        from perfkit.store import database  # SQLAlchemy: imported only where a database is named

        with database.open_store(db) as opened:
            where, kept = opened.where, opened.history(hardware_id, profile)
    else:
        storage = (storage_folder.storage_path(storage_option) if storage_option
                   else storage_folder.find_storage(Path.cwd()))
        where, kept = str(storage), storage_folder.load_history(storage, hardware_id)
        kept = kept if profile is None else kept.of_profile(profile)
    _say_skipped(kept)
    of = f" of {hardware_id}" if hardware_id else ""
    if not kept.runs and profile is not None:
        raise BaselineError(f"{where} holds no kept runs of the {profile} profile{of}")
    if not kept.runs:
        how = "store some with `perfkit history ingest`" if db else "run pytest with --benchmark-autosave"
        raise BaselineError(f"{where} holds no perfkit runs{of}; {how} first")
    if hardware_id is None and len(kept.hardware_ids()) > 1:
        raise UsageError(f"{where} holds runs of several machines ({', '.join(kept.hardware_ids())}); "
                         "pass --hardware-id to choose one")
    if len(kept.profiles()) > 1:
        raise UsageError(f"{where} holds runs of the {' and '.join(kept.profiles())} profiles, whose sizes "
                         "differ; pass --profile to choose one")
    return where, kept


def _say_skipped(kept: storage_folder.History) -> None:
    for line in kept.skipped:
        print(f"perfkit: skipped {line}", file=sys.stderr)


def _history_ingest(args: argparse.Namespace) -> int:
    """Every file read by the one loader first (a bad one stops the command before anything is stored), then
    each run stored in its own transaction, once: ingesting again is safe. A baseline is stored as the runs
    it was saved from, after the files given as runs, so that a run kept both ways is stored from its own
    file (which keeps its rounds)."""
    # database: SQLAlchemy, imported only where a database is named
    from perfkit.store import baseline_runs, database

    read: list[tuple[str, dict[str, Any], ResultSet]] = []
    unpacked: list[tuple[str, dict[str, Any], ResultSet]] = []
    notes = []
    for path in args.results:
        raw = load.read_json(path)
        results = load.parse(raw, str(path))
        _say_partial(results)
        _, injected = baselines.without_injected(results)
        if injected:
            raise BaselineError(f"{path}: {len(injected)} benchmark(s) carry an injected slowdown "
                                f"(e.g. {injected[0]}); a history keeps only real measurements: ingest a "
                                "run without it")
        if not baseline_runs.stands_for_runs(results):
            read.append((str(path), raw, results))
            continue
        runs = baseline_runs.unpack(results)
        for i, doc in enumerate(runs.runs, 1):
            source = f"{path} (run {i} of {len(runs.runs)})"
            unpacked.append((source, doc, load.parse(doc, source)))
        for i, doc in enumerate(runs.undated_runs, 1):
            source = f"{path} (undated run {i} of {len(runs.undated_runs)})"
            unpacked.append((source, doc, load.parse(doc, source)))
        if runs.undated:
            notes.append(f"perfkit: {path}: {len(runs.undated)} benchmark(s) (e.g. {runs.undated[0]}) stored "
                         f"as {len(runs.undated_runs)} undated run(s), before the dated ones: `baseline save "
                         "--merge` kept them from runs whose dates the file does not hold")
    stored = 0
    with database.open_store(args.db, create=True) as db:
        for source, raw, results in read + unpacked:
            done = db.ingest(raw, results, source)
            stored += done.stored
            what = (f"run {done.digest[:12]} of {results.hardware_id} ({results.profile} profile, "
                    f"{results.datetime[:16].replace('T', ' ') or 'undated'})")
            print(f"perfkit: {source}: {'stored as' if done.stored else 'already stored:'} {what}")
        for note in notes:
            print(note)
        print(f"perfkit: {stored} run(s) stored, {len(read) + len(unpacked) - stored} already there, "
              f"in {db.where}")
    return 0


def _dashboard(args: argparse.Namespace) -> int:
    """Every run of the database; the folder is checked before the database is read, and nothing in it but
    the dashboard's own pages and charts is written over."""
    from perfkit.render import dashboard, dashboard_html
    from perfkit.store import database  # SQLAlchemy: imported only where a database is named

    _out_folder(args.out, "the dashboard")
    with database.open_store(args.db) as db:
        where, kept = db.where, db.history()
    _say_skipped(kept)
    if not kept.runs:
        raise BaselineError(f"{where} holds no perfkit runs; store some with `perfkit history ingest "
                            f"RESULTS.json --db {where}` first")
    built = dashboard.build(kept, work_of)
    index = dashboard_html.write(built, args.out)
    pages = sum(len(g.benchmarks) for g in built.groups)
    print(f"perfkit: wrote {index} and {pages} benchmark page(s) of {len(built.groups)} hardware id(s) and "
          f"profile(s), from {len(kept)} run(s) in {where} (static: opens offline)")
    return 0


def _out_folder(out: Path, what: str) -> None:
    """Refuse an ``--out`` that is a file before anything is read, in the words ab's check uses."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a folder for {what} (made where it does not exist)")


def _report(args: argparse.Namespace) -> int:
    _out_folder(args.out, "the report")
    comparison = None
    if args.baseline:
        _, results, comparison = judge_files(args.baseline, args.results, args.threshold, args.history,
                                             args.db)
    else:
        results = read(args.results)
    kept = None
    if args.history or args.db:
        try:
            kept = _kept_runs(args.history, results.hardware_id, args.db, results.profile)[1]
        except BaselineError as exc:  # no runs of this machine: the report is still worth writing, said why
            print(f"perfkit: report without history: {exc}", file=sys.stderr)
    from perfkit import ab_report

    beside = args.results.parent / "ab.json"  # perfkit ab's folder: its table comes first
    first = [ab_report.section(ab_report.read(beside))] if beside.is_file() else []
    path = report.write_report(results, args.out, comparison, str(args.baseline or ""), kept, first)
    print(f"perfkit: wrote {path} and {path.with_suffix('.html')} (self-contained: opens offline)")
    return 0


def _say(line: str) -> None:
    """Progress of a long command (ab, bisect), on stderr as it happens: stdout holds only the result (the
    markdown a CI job summary takes)."""
    print(f"perfkit: {line}", file=sys.stderr, flush=True)


def _ab(args: argparse.Namespace) -> int:
    """The table, also of the pairs finished when the A/B was stopped midway."""
    from perfkit import ab, ab_report

    try:
        with stopping.interruptible():
            result = ab.ab(Path.cwd(), args.base, args.head, args.out, expr=args.expr, rounds=args.rounds,
                           seed=args.seed, benches=args.benches, touched=args.touched, say=_say)
    except stopping.Stopped as stop:
        if isinstance(stop.report, ab_report.AbReport):
            print(ab_report.render(stop.report, args.format), end="")
        raise
    print(ab_report.render(result, args.format), end="")
    return _failed(result.regressed()) if args.fail else 0


def _failed(regressed: Sequence[str]) -> int:
    """``--fail``'s exit status: 1, the regressed benchmarks named on stderr, when there are any."""
    if not regressed:
        return 0
    names = sorted(set(regressed))
    print(f"perfkit: {len(names)} benchmark(s) regressed: {', '.join(names)}", file=sys.stderr)
    return EXIT_REGRESSION


def _bisect(args: argparse.Namespace) -> int:
    from perfkit import ab_report, bisect

    with stopping.interruptible():
        found = bisect.bisect(Path.cwd(), args.good, args.bad, args.expr, args.rounds, args.out,
                              args.benches, say=_say)
    print(f"first bad commit: {found.commit} {found.summary}")
    print(ab_report.render(found.report), end="")
    return 0


def _memory(args: argparse.Namespace) -> int:
    from perfkit import console  # renders torch-side objects: imported only by the commands that need them
    from perfkit.measure.memory import MiB
    from perfkit.workloads import models  # imports torch (seconds)
    from perfkit.workloads.estimate import estimate_training_memory, measure_training_peak

    estimate = estimate_training_memory(args.model, _batch(args), models.parse_shape(args.input, 3))
    measured = measure_training_peak(args.model, args.batch, estimate.input_shape) if args.measure else None
    if args.json:
        payload = estimate.to_json()
        if measured is not None:
            payload["measured"] = {figures.PEAK_ALLOCATED_MIB.name: measured.allocated / MiB,
                                   figures.PEAK_RESERVED_MIB.name: measured.reserved / MiB,
                                   figures.ACTUAL_OVER_ESTIMATE.name: measured.allocated / estimate.total}
        print(json.dumps(payload, indent=2))
    else:
        print(console.render_memory(estimate, measured))
    return 0


def _flops(args: argparse.Namespace) -> int:
    from perfkit import console  # renders torch-side objects: imported only by the commands that need them
    from perfkit.workloads import flops, models

    table = flops.flop_table(args.model, (_batch(args), *models.parse_shape(args.input, 3)))
    if args.json:
        print(json.dumps(table.to_json(per_layer=True), indent=2))
    else:
        print(console.render_flops(table, args.per_layer))
    return 0


def _predict(args: argparse.Namespace) -> int:
    """Its usage checked before anything heavy is imported: a mistyped command is told so at once, not after
    the seconds torch takes to import."""
    if args.device is not None:
        if args.model is not None or args.gpu is not None:
            raise UsageError("--device predicts a benchmark family; MODEL and --gpu predict one model: give "
                             "one or the other")
        from perfkit import predict

        print(predict.family(args.device, args.family, args.at_hand, work_of, args.json))
        return 0
    if args.model is None or args.gpu is None:
        raise UsageError("give MODEL and --gpu KEY (one model's PALEO estimate), or --device "
                         "KEY|RESULTS.json (a benchmark family's times on a device)")
    if args.family is not None or args.at_hand:
        raise UsageError("--family and --from choose what --device predicts; pass --device too")
    from perfkit import console  # renders torch-side objects: imported only by the commands that need them
    from perfkit.workloads import flops, models, paleo

    spec = paleo.gpu_spec(args.gpu)
    table = flops.flop_table(args.model, (_batch(args), *models.parse_shape(args.input, 3)))
    prediction = paleo.predict(table, spec, args.precision, args.ppp)
    if args.json:
        print(json.dumps(prediction.to_json(per_layer=True), indent=2))
    else:
        print(console.render_prediction(prediction))
    return 0


def _batch(args: argparse.Namespace) -> int:
    if args.batch < 1:
        raise UsageError(f"--batch must be at least 1, not {args.batch}")
    return int(args.batch)


def _roofline(args: argparse.Namespace) -> int:
    from perfkit.render import plots

    if args.out.suffix.lower() != ".png":
        raise UsageError(f"--out {args.out}: the roofline is drawn as PNG; give a path ending in .png")
    path = plots.roofline_chart(read(args.results), args.out)
    if path is None:
        raise UsageError(f"{args.results} holds no roofline points; run benches/test_ppp.py on a GPU first")
    print(f"perfkit: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
